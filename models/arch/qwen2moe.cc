// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's attention (Q, K and V
// biases) with a mixture-of-experts FFN: a softmax router picks the top
// experts (their weights renormalised where norm_topk_prob says so; llama.cpp
// never does, so the GGUF form does not), and a shared expert runs on every
// token, scaled by the sigmoid of its own gate.
#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void qwen2moe_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "qwen2moe", spec);
  const int dense_width = spec->ffn_dim;  // feed_forward_length, before the experts' replaces it
  fill_gguf_experts(file, "qwen2moe", spec);
  spec->qkv_bias = true;
  const auto shared = file.get_uint("qwen2moe.expert_shared_feed_forward_length");
  if (shared && (*shared == 0 || *shared > uint64_t(INT32_MAX))) {
    throw Error(file.name() + ": key 'qwen2moe.expert_shared_feed_forward_length': out of range");
  }
  spec->moe.shared_ffn_dim = shared ? int(*shared) : dense_width;
}

void qwen2moe_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->qkv_bias = config.value("qkv_bias", true);
  spec->ffn_dim = required_hf_count(config, "moe_intermediate_size");
  spec->moe.n_experts = required_hf_count(config, config.contains("num_experts") ? "num_experts" : "num_local_experts");
  spec->moe.top_k = required_hf_count(config, "num_experts_per_tok");
  spec->moe.normalize_weights = config.value("norm_topk_prob", false);
  spec->moe.shared_ffn_dim = required_hf_count(config, "shared_expert_intermediate_size");
  const nlohmann::json dense = config.value("mlp_only_layers", nlohmann::json::array());
  if (config.value("decoder_sparse_step", 1) != 1 || (dense.is_array() && !dense.empty())) {
    throw Error("config.json: 'decoder_sparse_step' / 'mlp_only_layers': dense FFN layers in a qwen2_moe model are not supported");
  }
  if (config.value("use_sliding_window", false)) throw Error("config.json: 'use_sliding_window' is not supported for qwen2_moe");
}

}  // namespace

Architecture qwen2moe_architecture() {
  return {"qwen2moe", {"qwen2_moe"}, qwen2moe_from_gguf, qwen2moe_from_hf, standard_gguf_names(), qwen_moe_hf_names()};
}

}  // namespace tessera
