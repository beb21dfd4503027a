// Qwen3-MoE: Qwen3's attention (QK norm) with a mixture-of-experts FFN on
// every layer: a softmax router picks the top experts of each token, whose
// weights are renormalised where norm_topk_prob says so. llama.cpp always
// renormalises, so the GGUF form does.
#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void qwen3moe_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "qwen3moe", spec);
  fill_gguf_experts(file, "qwen3moe", spec);
  spec->qk_norm = true;
  spec->moe.normalize_weights = true;
}

void qwen3moe_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->qk_norm = true;
  spec->ffn_dim = required_hf_count(config, "moe_intermediate_size");
  // transformers 5 names it num_local_experts.
  spec->moe.n_experts = required_hf_count(config, config.contains("num_experts") ? "num_experts" : "num_local_experts");
  spec->moe.top_k = required_hf_count(config, "num_experts_per_tok");
  spec->moe.normalize_weights = config.value("norm_topk_prob", false);
  // Dense layers between the sparse ones are not built here.
  const nlohmann::json dense = config.value("mlp_only_layers", nlohmann::json::array());
  if (config.value("decoder_sparse_step", 1) != 1 || (dense.is_array() && !dense.empty())) {
    throw Error("config.json: 'decoder_sparse_step' / 'mlp_only_layers': dense FFN layers in a qwen3_moe model are not supported");
  }
  if (config.value("use_sliding_window", false)) throw Error("config.json: 'use_sliding_window' is not supported for qwen3_moe");
}

}  // namespace

Architecture qwen3moe_architecture() {
  return {"qwen3moe", {"qwen3_moe"}, qwen3moe_from_gguf, qwen3moe_from_hf, standard_gguf_names(), qwen_moe_hf_names()};
}

}  // namespace tessera
