#include "models/tokenizer/load_tokenizer.h"

#include <filesystem>

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"
#include "models/hf/hf_model_dir.h"

namespace tessera {

Tokenizer load_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string json_path;
  if (fs::is_directory(path, ec)) {
    json_path = path + "/tokenizer.json";
  } else if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    json_path = path;
  } else {
    return Tokenizer::from_gguf(gguf::File::open(path));
  }
  const auto text = hf::read_text_file(json_path);
  if (!text) throw Error(json_path + ": not found");
  const std::string config_path = fs::path(json_path).parent_path().string() + "/tokenizer_config.json";
  const auto config = hf::read_text_file(config_path);
  return Tokenizer::from_hf_json(*text, config.value_or(""), json_path);
}

}  // namespace tessera
