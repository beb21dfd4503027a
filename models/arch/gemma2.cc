// Gemma 2: sliding-window attention on every other layer (the even ones),
// softcaps on attention scores and final logits, norms before and after
// attention and FFN with Gemma's (1 + weight), GeGLU, scaled embeddings.
#include <cmath>

#include "models/architecture.h"

namespace tessera {
namespace {

float optional_float(const nlohmann::json& config, const char* key) {
  return config.contains(key) && config[key].is_number() ? config[key].get<float>() : 0.0f;
}

void gemma2_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->activation = FfnActivation::kGeGluTanh;
  spec->norm_weight_offset = 1.0f;
  spec->post_attention_norm = true;
  spec->post_ffn_norm = true;
  spec->tied_embeddings = config.value("tie_word_embeddings", true);
  spec->embedding_scale = std::sqrt(float(spec->d_model));
  spec->attention_scale = 1.0f / std::sqrt(config.value("query_pre_attn_scalar", float(spec->head_dim)));
  spec->attn_softcap = optional_float(config, "attn_logit_softcapping");
  spec->final_logit_softcap = optional_float(config, "final_logit_softcapping");
  const int window = config.value("sliding_window", 4096);
  for (int l = 0; l < spec->n_layers; l += 2) spec->sliding_window[size_t(l)] = window;
}

WeightNames gemma2_hf_names() {
  WeightNames n = llama_hf_names();
  n.post_attn_norm = "model.layers.{}.post_attention_layernorm.weight";
  n.ffn_norm = "model.layers.{}.pre_feedforward_layernorm.weight";
  n.post_ffn_norm = "model.layers.{}.post_feedforward_layernorm.weight";
  return n;
}

}  // namespace

Architecture gemma2_architecture() { return {"", {"gemma2"}, nullptr, gemma2_from_hf, {}, gemma2_hf_names()}; }

}  // namespace tessera
