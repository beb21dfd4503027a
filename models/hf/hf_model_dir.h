#pragma once
// A Hugging Face model directory: config.json, the tokenizer files,
// generation_config.json and the weights (model.safetensors, or shards listed
// in model.safetensors.index.json). Everything is validated on open.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/safetensors/safetensors_file.h"

namespace tessera::hf {

constexpr uint64_t kMaxJsonFileBytes = 256ull << 20;

struct WeightRef {
  const safetensors::File* file;
  const safetensors::TensorInfo* tensor;
};

class ModelDir {
 public:
  // Throws tessera::Error naming the file and the fault.
  static ModelDir open(const std::string& dir);

  const std::string& path() const { return path_; }
  const nlohmann::json& config() const { return config_; }
  const std::optional<nlohmann::json>& generation_config() const { return generation_config_; }
  const std::optional<nlohmann::json>& tokenizer_config() const { return tokenizer_config_; }
  // Raw text of tokenizer.json, when present.
  const std::optional<std::string>& tokenizer_json() const { return tokenizer_json_; }

  const std::vector<std::unique_ptr<safetensors::File>>& shards() const { return shards_; }
  std::optional<WeightRef> find_weight(std::string_view name) const;
  size_t weight_count() const;

 private:
  void load_single(const std::string& file);
  void load_sharded(const std::string& index_file);

  std::string path_;
  nlohmann::json config_;
  std::optional<nlohmann::json> generation_config_;
  std::optional<nlohmann::json> tokenizer_config_;
  std::optional<std::string> tokenizer_json_;
  std::vector<std::unique_ptr<safetensors::File>> shards_;
};

// Reads a whole text file of at most kMaxJsonFileBytes; nullopt if absent.
std::optional<std::string> read_text_file(const std::string& path);
// Parses JSON text, naming `source` in the error.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

}  // namespace tessera::hf
