// tessera inspect FILE: what a model file holds, or a clear error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include <filesystem>

#include "models/gguf/gguf_file.h"
#include "models/hf/hf_model_dir.h"
#include "models/tokenizer/tokenizer.h"
#include "server/cli/commands.h"

namespace tessera::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool all_metadata = false;
};

std::string human_bytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

void print_hyperparameters(const gguf::File& file, const std::string& arch) {
  static const char* const kKeys[] = {
      "context_length", "embedding_length", "block_count", "feed_forward_length",
      "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
      "attention.layer_norm_rms_epsilon", "attention.sliding_window", "rope.freq_base", "rope.dimension_count",
      "rope.scaling.type", "rope.scaling.factor", "vocab_size"};
  for (const char* key : kKeys) {
    if (const gguf::Value* v = file.find(arch + "." + key)) std::printf("  %-34s %s\n", key, v->summary().c_str());
  }
}

void print_tokenizer(const gguf::File& file) {
  if (!file.find("tokenizer.ggml.model")) {
    std::printf("tokenizer: none\n");
    return;
  }
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const Vocab& v = tokenizer.vocab();
  std::printf("tokenizer: %s, %zu tokens", tokenizer.kind_name().c_str(), v.size());
  if (v.model == TokenizerModel::kBytePair) std::printf(", %zu merges, pre-tokenizer %s", v.merge_ranks.size(), v.pre_name.c_str());
  std::printf(", bos %d, eos %d\n", v.bos, v.eos);
}

void print_tensor_summary(const std::map<std::string, int>& type_counts, size_t count, uint64_t tensor_bytes,
                          uint64_t file_bytes) {
  std::printf("tensors: %zu (", count);
  bool first = true;
  for (const auto& [type, n] : type_counts) {
    std::printf("%s%s x%d", first ? "" : ", ", type.c_str(), n);
    first = false;
  }
  std::printf(")\n");
  std::printf("size: %s of tensor data, %s on disk\n", human_bytes(tensor_bytes).c_str(), human_bytes(file_bytes).c_str());
}

int inspect_hf_dir(const std::string& path) {
  const hf::ModelDir dir = hf::ModelDir::open(path);
  const nlohmann::json& config = dir.config();
  std::printf("directory: %s\n", path.c_str());
  std::printf("format: Hugging Face, %zu safetensors file(s)\n", dir.shards().size());
  std::printf("architecture: %s\n", config.value("model_type", std::string("unknown")).c_str());
  std::printf("hyper-parameters:\n");
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                          "sliding_window", "vocab_size", "tie_word_embeddings", "torch_dtype"}) {
    if (config.contains(key) && !config[key].is_null()) std::printf("  %-34s %s\n", key, config[key].dump().c_str());
  }
  if (dir.tokenizer_json()) {
    const std::string config_text = dir.tokenizer_config() ? dir.tokenizer_config()->dump() : "";
    const Tokenizer tokenizer = Tokenizer::from_hf_json(*dir.tokenizer_json(), config_text, path + "/tokenizer.json");
    std::printf("tokenizer: %s, %zu tokens, %zu merges\n", tokenizer.kind_name().c_str(), tokenizer.vocab().size(),
                tokenizer.vocab().merge_ranks.size());
  } else {
    std::printf("tokenizer: none\n");
  }
  std::map<std::string, int> type_counts;
  uint64_t tensor_bytes = 0, file_bytes = 0;
  for (const auto& shard : dir.shards()) {
    file_bytes += std::filesystem::file_size(shard->name());
    for (const auto& t : shard->tensors()) {
      ++type_counts[std::string(dtype_name(t.dtype))];
      tensor_bytes += t.end - t.begin;
    }
  }
  print_tensor_summary(type_counts, dir.weight_count(), tensor_bytes, file_bytes);
  return 0;
}

int inspect_safetensors(const std::string& path) {
  const safetensors::File file = safetensors::File::open(path);
  std::printf("file: %s\n", path.c_str());
  std::printf("format: safetensors, %zu metadata entries\n", file.metadata().size());
  std::map<std::string, int> type_counts;
  uint64_t tensor_bytes = 0;
  for (const auto& t : file.tensors()) {
    ++type_counts[std::string(dtype_name(t.dtype))];
    tensor_bytes += t.end - t.begin;
  }
  print_tensor_summary(type_counts, file.tensors().size(), tensor_bytes, std::filesystem::file_size(path));
  return 0;
}

int run_inspect(const InspectOptions& options) {
  if (std::filesystem::is_directory(options.path)) return inspect_hf_dir(options.path);
  const std::string& p = options.path;
  if (p.size() > 12 && p.compare(p.size() - 12, 12, ".safetensors") == 0) return inspect_safetensors(p);
  const gguf::File file = gguf::File::open(options.path);
  const std::string arch = file.get_string("general.architecture").value_or("unknown");
  std::printf("file: %s\n", options.path.c_str());
  std::printf("format: GGUF v%u, alignment %llu\n", file.version(), (unsigned long long)file.alignment());
  std::printf("architecture: %s\n", arch.c_str());
  if (auto name = file.get_string("general.name")) std::printf("name: %s\n", name->c_str());
  std::printf("hyper-parameters:\n");
  print_hyperparameters(file, arch);
  print_tokenizer(file);
  std::map<std::string, int> type_counts;
  uint64_t tensor_bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors()) {
    ++type_counts[std::string(dtype_name(t.dtype))];
    tensor_bytes += t.n_bytes;
  }
  print_tensor_summary(type_counts, file.tensors().size(), tensor_bytes, file.file_size());
  if (options.all_metadata) {
    std::printf("metadata:\n");
    for (const gguf::KeyValue& kv : file.metadata()) std::printf("  %s = %s\n", kv.key.c_str(), kv.value.summary().c_str());
  }
  return 0;
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show what a model file holds");
  cmd->add_option("file", options->path, "GGUF file or Hugging Face model directory")->required();
  cmd->add_flag("--metadata", options->all_metadata, "Also list every metadata key");
  return [options] { return run_inspect(*options); };
}

}  // namespace tessera::cli
