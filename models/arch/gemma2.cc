// Gemma 2: sliding-window attention on every other layer (the even ones),
// softcaps on attention scores and final logits, norms before and after
// attention and FFN with Gemma's (1 + weight), GeGLU, scaled embeddings.
#include <cmath>

#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

constexpr int kDefaultWindow = 4096;
constexpr int kLayersOf27B = 46;

// The layers after the norms, the scaled embeddings and the windows on even
// layers, shared by both forms.
void finish(int window, DecoderSpec* spec) {
  spec->post_attention_norm = true;
  spec->post_ffn_norm = true;
  spec->embedding_scale = std::sqrt(float(spec->d_model));
  for (int l = 0; l < spec->n_layers; l += 2) spec->sliding_window[size_t(l)] = window;
}

// The GGUF form does not store query_pre_attn_scalar: llama.cpp takes the
// head width, or for the 27B model (46 layers) d_model / heads, which is
// what Google's configurations set; its converter has added Gemma's 1 to
// the norm weights; llama.cpp scales the queries, and evaluates GELU
// through its f16 table.
void gemma2_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "gemma2", spec);
  spec->activation = FfnActivation::kGeGluTanhTable;
  spec->tied_embeddings = true;
  spec->scale_queries = true;
  const float scale_dim = spec->n_layers == kLayersOf27B ? float(spec->d_model / spec->n_heads) : float(spec->head_dim);
  spec->attention_scale = 1.0f / std::sqrt(scale_dim);
  spec->attn_softcap = float(file.get_float("gemma2.attn_logit_softcapping").value_or(0.0));
  spec->final_logit_softcap = float(file.get_float("gemma2.final_logit_softcapping").value_or(0.0));
  finish(int(file.get_uint("gemma2.attention.sliding_window").value_or(kDefaultWindow)), spec);
}

void gemma2_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->activation = FfnActivation::kGeGluTanh;
  spec->norm_weight_offset = 1.0f;
  spec->tied_embeddings = config.value("tie_word_embeddings", true);
  spec->attention_scale = 1.0f / std::sqrt(config.value("query_pre_attn_scalar", float(spec->head_dim)));
  spec->attn_softcap = optional_hf_number(config, "attn_logit_softcapping");
  spec->final_logit_softcap = optional_hf_number(config, "final_logit_softcapping");
  finish(config.value("sliding_window", kDefaultWindow), spec);
}

}  // namespace

Architecture gemma2_architecture() { return {"gemma2", {"gemma2"}, gemma2_from_gguf, gemma2_from_hf, standard_gguf_names(), gemma_hf_names()}; }

}  // namespace tessera
