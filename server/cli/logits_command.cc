// tessera logits: the next-token logits at every prompt position, written as
// little-endian float32 [n_tokens][vocab] to a file, and the prompt's token
// ids to stdout. For comparing the engine with reference implementations.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "server/cli/commands.h"
#include "server/cli/engine_options.h"
#include "server/cli/sequence_driver.h"

namespace tessera::cli {
namespace {

struct LogitsOptions {
  EngineOptions engine;
  std::string prompt;
  std::vector<int32_t> token_ids;
  std::string out;
  std::string dump_dir;
  bool add_special = true;
  int batch = 512;
};

int run_logits(const LogitsOptions& o) {
  const std::unique_ptr<ModelRunner> owned_runner = make_runner(o.engine, std::min(o.batch, kMaxCliBatch));
  ModelRunner& runner = *owned_runner;
  const std::vector<int32_t> ids =
      o.token_ids.empty() ? runner.model().tokenizer().encode(o.prompt, {.add_special = o.add_special, .parse_special = true})
                          : o.token_ids;
  if (ids.empty()) throw Error("the prompt has no tokens");
  if (!o.dump_dir.empty()) {
    runner.set_observer([dir = o.dump_dir](const char* name, int layer, const float* values, int64_t n_tokens, int64_t width) {
      const std::string path = dir + "/" + name + "-" + std::to_string(layer) + ".f32";
      std::ofstream f(path, std::ios::binary | std::ios::app);
      f.write(reinterpret_cast<const char*>(values), std::streamsize(n_tokens * width * int64_t(sizeof(float))));
    });
  }
  SequenceDriver seq(runner, SamplingParams{}, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> logits = seq.feed(ids, o.batch, true, false);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "prefill: %.1f tok/s (%zu tokens, logits for all)\n", double(ids.size()) / seconds, ids.size());
  std::ofstream f(o.out, std::ios::binary);
  if (!f) throw Error(o.out + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
  if (!f) throw Error(o.out + ": write failed");
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace

Runner add_logits_command(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand("logits", "Write the logits of every prompt position to a file");
  add_engine_options(cmd, &o->engine);
  auto* prompt = cmd->add_option("--prompt,-p", o->prompt, "Prompt text");
  auto* ids = cmd->add_option("--token-ids", o->token_ids, "Prompt as token ids instead of text")->delimiter(',');
  prompt->excludes(ids);
  cmd->require_option(1, 0);
  cmd->add_option("--out,-o", o->out, "Output file (float32, [tokens][vocab])")->required();
  cmd->add_option("--batch", o->batch, "Prompt tokens per forward pass")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_flag("!--no-special", o->add_special, "Do not add BOS/EOS");
  cmd->add_option("--dump-dir", o->dump_dir, "Append each layer's activations to files in this directory");
  return [o] { return run_logits(*o); };
}

}  // namespace tessera::cli
