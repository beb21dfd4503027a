// tessera tokenize --model FILE --text T: the token ids as a JSON array.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "models/tokenizer/load_tokenizer.h"
#include "server/cli/commands.h"

namespace tessera::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool add_special = false;
  bool parse_special = false;
};

int run_tokenize(const TokenizeOptions& options) {
  const Tokenizer tokenizer = load_tokenizer(options.model);
  const std::vector<TokenId> ids = tokenizer.encode(options.text, {options.add_special, options.parse_special});
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  cmd->add_option("--model,-m", options->model, "GGUF file, Hugging Face model directory or tokenizer.json")->required();
  cmd->add_option("--text,-t", options->text, "Text to tokenize")->required();
  cmd->add_flag("--add-special", options->add_special, "Add BOS/EOS as the model asks");
  cmd->add_flag("--parse-special", options->parse_special, "Turn special-token text into those tokens");
  return [options] { return run_tokenize(*options); };
}

}  // namespace tessera::cli
