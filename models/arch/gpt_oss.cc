// gpt-oss: attention with biases and a learned sink per head, a sliding
// window on every other layer (the even ones), YaRN rotary scaling, and a
// mixture-of-experts FFN on every layer: a router with a bias picks the top
// experts, whose weights are the softmax over their scores, each expert a
// clamped SwiGLU with biases.
#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

constexpr int kDefaultWindow = 128;

void finish(int window, DecoderSpec* spec) {
  spec->qkv_bias = spec->o_bias = true;
  spec->attention_sinks = true;
  spec->activation = FfnActivation::kSwiGluClampedOai;
  spec->moe.normalize_weights = true;  // the softmax over the chosen experts' scores
  spec->moe.biases = true;
  for (int l = 0; l < spec->n_layers; l += 2) spec->sliding_window[size_t(l)] = window;
}

void gpt_oss_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "gpt-oss", spec);
  fill_gguf_experts(file, "gpt-oss", spec);
  finish(int(file.get_uint("gpt-oss.attention.sliding_window").value_or(kDefaultWindow)), spec);
}

void gpt_oss_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->moe.n_experts = required_hf_count(config, "num_local_experts");
  spec->moe.top_k = required_hf_count(config, "num_experts_per_tok");
  // The kernel's clamp is gpt-oss's; a checkpoint asking for another is refused.
  if (config.value("swiglu_limit", ops::kOaiSwiGluLimit) != ops::kOaiSwiGluLimit ||
      config.value("swiglu_alpha", ops::kOaiSwiGluAlpha) != ops::kOaiSwiGluAlpha) {
    throw Error("config.json: 'swiglu_limit' / 'swiglu_alpha': only gpt-oss's 7.0 and 1.702 are supported");
  }
  finish(config.value("sliding_window", kDefaultWindow), spec);
  const nlohmann::json types = config.value("layer_types", nlohmann::json());
  if (types.is_array() && int(types.size()) == spec->n_layers) {
    for (int l = 0; l < spec->n_layers; ++l) {
      spec->sliding_window[size_t(l)] = types[size_t(l)] == "sliding_attention" ? config.value("sliding_window", kDefaultWindow) : 0;
    }
  }
}

WeightNames gpt_oss_hf_names() {
  WeightNames n = llama_hf_names();
  n.sinks = "model.layers.{}.self_attn.sinks";
  n.router = "model.layers.{}.mlp.router.weight";
  n.router_bias = "model.layers.{}.mlp.router.bias";
  n.experts_input_major = true;
  n.expert_gate = n.expert_up = "model.layers.{}.mlp.experts.gate_up_proj";
  n.expert_gate_bias = n.expert_up_bias = "model.layers.{}.mlp.experts.gate_up_proj_bias";
  n.expert_down = "model.layers.{}.mlp.experts.down_proj";
  n.expert_down_bias = "model.layers.{}.mlp.experts.down_proj_bias";
  return n;
}

// llama.cpp's converter names the norm before the FFN post_attention_norm.
WeightNames gpt_oss_gguf_names() {
  WeightNames n = standard_gguf_names();
  n.ffn_norm = "blk.{}.post_attention_norm.weight";
  return n;
}

}  // namespace

Architecture gpt_oss_architecture() {
  return {"gpt-oss", {"gpt_oss"}, gpt_oss_from_gguf, gpt_oss_from_hf, gpt_oss_gguf_names(), gpt_oss_hf_names()};
}

}  // namespace tessera
