// Llama 2/3, SmolLM2 and other Llama-shaped models; in GGUF also Mixtral
// (llama with experts: softmax router, top-k, weights renormalised).
#include <algorithm>

#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void llama_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "llama", spec);
  // llama.cpp's converter permutes Q and K so rotation pairs are adjacent.
  spec->rope.pairing = RotaryPairing::kAdjacent;
  if (file.get_uint("llama.expert_count").value_or(0) > 0) {
    fill_gguf_experts(file, "llama", spec);
    spec->moe.normalize_weights = true;
  }
}

void llama_from_hf(const nlohmann::json& config, DecoderSpec* spec) { fill_common_hf(config, spec); }

nlohmann::json llama_hf_config(const DecoderSpec& spec) {
  if (spec.moe.n_experts > 0) throw Error("a llama model with experts cannot be described by config.json here");
  if (std::count(spec.sliding_window.begin(), spec.sliding_window.end(), 0) != long(spec.sliding_window.size())) {
    throw Error("a llama model with sliding-window layers cannot be described by config.json");
  }
  return common_hf_config(spec, "llama", "LlamaForCausalLM");
}

}  // namespace

Architecture llama_architecture() {
  return {"llama", {"llama"}, llama_from_gguf, llama_from_hf, standard_gguf_names(), llama_hf_names(), llama_hf_config};
}

}  // namespace tessera
