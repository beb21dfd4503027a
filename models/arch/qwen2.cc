// Qwen2: Llama's layout with biases on the Q, K and V projections.
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void qwen2_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "qwen2", spec);
  spec->qkv_bias = true;
}

void qwen2_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->qkv_bias = true;
  if (config.value("use_sliding_window", false) && config.contains("sliding_window") && config["sliding_window"].is_number_integer()) {
    const int window = config["sliding_window"].get<int>();
    const int first = config.value("max_window_layers", spec->n_layers);
    for (int l = first; l < spec->n_layers; ++l) spec->sliding_window[size_t(l)] = window;
  }
}

}  // namespace

Architecture qwen2_architecture() {
  return {"qwen2", {"qwen2"}, qwen2_from_gguf, qwen2_from_hf, standard_gguf_names(), llama_hf_names()};
}

}  // namespace tessera
