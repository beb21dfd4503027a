// Mixtral: Mistral's layout with a mixture-of-experts FFN on every layer
// (softmax router, top-k experts, their weights renormalised). Its GGUF form
// is llama.cpp's "llama" architecture with experts (models/arch/llama.cc).
#include "models/architecture.h"

namespace tessera {
namespace {

void mixtral_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->moe.n_experts = required_hf_count(config, "num_local_experts");
  spec->moe.top_k = required_hf_count(config, "num_experts_per_tok");
  spec->moe.normalize_weights = true;
  const nlohmann::json window = config.value("sliding_window", nlohmann::json());
  if (window.is_number_integer() && window.get<int>() > 0) spec->sliding_window.assign(size_t(spec->n_layers), window.get<int>());
}

WeightNames mixtral_hf_names() {
  WeightNames n = llama_hf_names();
  n.router = "model.layers.{}.block_sparse_moe.gate.weight";
  n.expert_gate = "model.layers.{}.block_sparse_moe.experts.{x}.w1.weight";
  n.expert_up = "model.layers.{}.block_sparse_moe.experts.{x}.w3.weight";
  n.expert_down = "model.layers.{}.block_sparse_moe.experts.{x}.w2.weight";
  return n;
}

}  // namespace

Architecture mixtral_architecture() { return {"", {"mixtral"}, nullptr, mixtral_from_hf, {}, mixtral_hf_names()}; }

}  // namespace tessera
