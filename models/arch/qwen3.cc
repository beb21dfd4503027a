// Qwen3: Llama's layout with RMSNorm on each query and key head (QK norm),
// optional attention biases, and sliding windows from max_window_layers on.
#include <algorithm>

#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void qwen3_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "qwen3", spec);
  spec->qk_norm = true;
}

void qwen3_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->qk_norm = true;
  const nlohmann::json window = config.value("sliding_window", nlohmann::json());
  if (config.value("use_sliding_window", false) && window.is_number_integer()) {
    const int first = config.value("max_window_layers", spec->n_layers);
    for (int l = std::max(first, 0); l < spec->n_layers; ++l) spec->sliding_window[size_t(l)] = window.get<int>();
  }
}

}  // namespace

Architecture qwen3_architecture() { return {"qwen3", {"qwen3"}, qwen3_from_gguf, qwen3_from_hf, standard_gguf_names(), llama_hf_names()}; }

}  // namespace tessera
