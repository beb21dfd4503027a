// tessera inspect FILE: what a model file holds, or a clear error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

#include "models/gguf/gguf_file.h"
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

int run_inspect(const InspectOptions& options) {
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
  std::printf("tensors: %zu (", file.tensors().size());
  bool first = true;
  for (const auto& [type, count] : type_counts) {
    std::printf("%s%s x%d", first ? "" : ", ", type.c_str(), count);
    first = false;
  }
  std::printf(")\n");
  std::printf("size: %s of tensor data, %s file\n", human_bytes(tensor_bytes).c_str(), human_bytes(file.file_size()).c_str());
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
  cmd->add_option("file", options->path, "GGUF model file")->required();
  cmd->add_flag("--metadata", options->all_metadata, "Also list every metadata key");
  return [options] { return run_inspect(*options); };
}

}  // namespace tessera::cli
