// Gemma 2: sliding-window attention on every other layer (the even ones),
// softcaps on attention scores and final logits, norms before and after
// attention and FFN with Gemma's (1 + weight), GeGLU, scaled embeddings.
#include <cmath>

#include "models/architecture.h"

namespace tessera {
namespace {

void gemma2_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->activation = FfnActivation::kGeGluTanh;
  spec->norm_weight_offset = 1.0f;
  spec->post_attention_norm = true;
  spec->post_ffn_norm = true;
  spec->tied_embeddings = config.value("tie_word_embeddings", true);
  spec->embedding_scale = std::sqrt(float(spec->d_model));
  spec->attention_scale = 1.0f / std::sqrt(config.value("query_pre_attn_scalar", float(spec->head_dim)));
  spec->attn_softcap = optional_hf_number(config, "attn_logit_softcapping");
  spec->final_logit_softcap = optional_hf_number(config, "final_logit_softcapping");
  const int window = config.value("sliding_window", 4096);
  for (int l = 0; l < spec->n_layers; l += 2) spec->sliding_window[size_t(l)] = window;
}

}  // namespace

Architecture gemma2_architecture() { return {"", {"gemma2"}, nullptr, gemma2_from_hf, {}, gemma_hf_names()}; }

}  // namespace tessera
