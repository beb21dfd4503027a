// Phi-3: Q, K and V in one matrix and gate and up in another, split at load;
// an optional sliding window on every layer; partial rotary dimensions.
#include "models/architecture.h"

namespace tessera {
namespace {

void phi3_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  const nlohmann::json window = config.value("sliding_window", nlohmann::json());
  if (window.is_number_integer()) spec->sliding_window.assign(size_t(spec->n_layers), window.get<int>());
}

WeightNames phi3_hf_names() {
  WeightNames n = llama_hf_names();
  n.q = n.k = n.v = n.q_bias = n.k_bias = n.v_bias = n.o_bias = "";
  n.qkv = "model.layers.{}.self_attn.qkv_proj.weight";
  n.gate = n.up = n.gate_bias = n.up_bias = n.down_bias = "";
  n.gate_up = "model.layers.{}.mlp.gate_up_proj.weight";
  return n;
}

}  // namespace

Architecture phi3_architecture() { return {"", {"phi3"}, nullptr, phi3_from_hf, {}, phi3_hf_names()}; }

}  // namespace tessera
