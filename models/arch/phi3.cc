// Phi-3: Q, K and V in one matrix and gate and up in another, split at load;
// an optional sliding window on every layer; partial rotary dimensions.
// The GGUF form keeps the window the file states, as transformers does
// (llama.cpp ignores it for this architecture).
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void phi3_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  const nlohmann::json window = config.value("sliding_window", nlohmann::json());
  if (window.is_number_integer()) spec->sliding_window.assign(size_t(spec->n_layers), window.get<int>());
}

void phi3_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "phi3", spec);
  const int window = int(file.get_uint("phi3.attention.sliding_window").value_or(0));
  if (window > 0) spec->sliding_window.assign(size_t(spec->n_layers), window);
}

// llama.cpp's converter keeps both fusions: attn_qkv, and gate then up rows in ffn_up.
WeightNames phi3_gguf_names() {
  WeightNames n = standard_gguf_names();
  n.q = n.k = n.v = n.q_bias = n.k_bias = n.v_bias = n.o_bias = "";
  n.qkv = "blk.{}.attn_qkv.weight";
  n.gate = n.up = n.gate_bias = n.up_bias = n.down_bias = "";
  n.gate_up = "blk.{}.ffn_up.weight";
  return n;
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

Architecture phi3_architecture() { return {"phi3", {"phi3"}, phi3_from_gguf, phi3_from_hf, phi3_gguf_names(), phi3_hf_names()}; }

}  // namespace tessera
