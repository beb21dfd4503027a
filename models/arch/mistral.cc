// Mistral: Llama's layout, with an optional sliding window on every layer.
#include <algorithm>

#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void apply_window(int window, DecoderSpec* spec) {
  if (window > 0) spec->sliding_window.assign(size_t(spec->n_layers), window);
}

void mistral_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "mistral", spec);
  spec->rope.pairing = RotaryPairing::kAdjacent;
  apply_window(int(file.get_uint("mistral.attention.sliding_window").value_or(0)), spec);
}

void mistral_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  if (config.contains("sliding_window") && config["sliding_window"].is_number_integer()) {
    apply_window(config["sliding_window"].get<int>(), spec);
  }
}

nlohmann::json mistral_hf_config(const DecoderSpec& spec) {
  const int window = spec.sliding_window.empty() ? 0 : spec.sliding_window[0];
  if (std::count(spec.sliding_window.begin(), spec.sliding_window.end(), window) != long(spec.sliding_window.size())) {
    throw Error("a mistral model whose layers have different windows cannot be described by config.json");
  }
  nlohmann::json c = common_hf_config(spec, "mistral", "MistralForCausalLM");
  c["sliding_window"] = window > 0 ? nlohmann::json(window) : nlohmann::json(nullptr);
  return c;
}

}  // namespace

Architecture mistral_architecture() {
  return {"mistral", {"mistral"}, mistral_from_gguf, mistral_from_hf, standard_gguf_names(), llama_hf_names(), mistral_hf_config};
}

}  // namespace tessera
