// Qwen2: Llama's layout with biases on the Q, K and V projections.
#include <algorithm>

#include "engine/core/error.h"
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

// Qwen2's config has no attention_bias: q/k/v always carry biases, o never.
nlohmann::json qwen2_hf_config(const DecoderSpec& spec) {
  if (!spec.qkv_bias || spec.o_bias) throw Error("a qwen2 model without q/k/v biases (or with an output bias) cannot be described by config.json");
  DecoderSpec plain = spec;
  plain.qkv_bias = false;
  nlohmann::json c = common_hf_config(plain, "qwen2", "Qwen2ForCausalLM");
  c.erase("attention_bias");
  const auto first_window = std::find_if(spec.sliding_window.begin(), spec.sliding_window.end(), [](int w) { return w != 0; });
  const bool windowed = first_window != spec.sliding_window.end();
  if (windowed && !std::all_of(first_window, spec.sliding_window.end(), [&](int w) { return w == *first_window; })) {
    throw Error("a qwen2 model whose windowed layers differ cannot be described by config.json");
  }
  c["use_sliding_window"] = windowed;
  c["sliding_window"] = windowed ? *first_window : spec.max_context;
  c["max_window_layers"] = int(first_window - spec.sliding_window.begin());
  return c;
}

}  // namespace

Architecture qwen2_architecture() {
  return {"qwen2", {"qwen2"}, qwen2_from_gguf, qwen2_from_hf, standard_gguf_names(), llama_hf_names(), qwen2_hf_config};
}

}  // namespace tessera
