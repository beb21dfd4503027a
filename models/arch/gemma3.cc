// Gemma 3 (text): sliding-window and global layers with their own rope
// bases, QK norm, norms before and after attention and FFN, GeGLU, scaled
// embeddings, tied output.
#include <cmath>

#include "models/architecture.h"
#include "models/gguf/gguf_file.h"
#include "models/rope_frequencies.h"

namespace tessera {
namespace {

constexpr int kDefaultGlobalEvery = 6;  // five sliding layers, then one global
constexpr float kLocalRopeBase = 10000.0f;

void finish(int window, int global_every, DecoderSpec* spec) {
  spec->rope.pairing = RotaryPairing::kHalves;
  spec->qk_norm = true;
  spec->post_attention_norm = true;
  spec->post_ffn_norm = true;
  spec->embedding_scale = std::sqrt(float(spec->d_model));
  for (int l = 0; l < spec->n_layers; ++l) {
    spec->sliding_window[size_t(l)] = (l + 1) % global_every == 0 ? 0 : window;
  }
}

void gemma3_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "gemma3", spec);
  spec->rope.local_base = kLocalRopeBase;
  spec->attention_scale = 1.0f / std::sqrt(float(spec->head_dim));
  // llama.cpp's Gemma graph scales the queries, so with an f16 cache they
  // are rounded after scaling (which decides tiny components).
  spec->scale_queries = true;
  // The converter stores norm weights with Gemma's +1 already added.
  spec->norm_weight_offset = 0.0f;
  // GGUF checkpoints are compared with llama.cpp, which evaluates GELU
  // through an f16 table; Hugging Face ones with transformers' exact GELU.
  spec->activation = FfnActivation::kGeGluTanhTable;
  finish(int(file.get_uint("gemma3.attention.sliding_window").value_or(512)), kDefaultGlobalEvery, spec);
}

void gemma3_from_hf(const nlohmann::json& config, DecoderSpec* spec) {
  fill_common_hf(config, spec);
  spec->rope.local_base = config.value("rope_local_base_freq", kLocalRopeBase);
  spec->rope.local_inv_freq = transformers_inv_freq(spec->rope.local_base, spec->rope.dim, nullptr);
  spec->attention_scale = 1.0f / std::sqrt(config.value("query_pre_attn_scalar", float(spec->head_dim)));
  spec->norm_weight_offset = 1.0f;
  spec->activation = FfnActivation::kGeGluTanh;
  spec->tied_embeddings = config.value("tie_word_embeddings", true);
  spec->final_logit_softcap = optional_hf_number(config, "final_logit_softcapping");
  spec->attn_softcap = optional_hf_number(config, "attn_logit_softcapping");
  finish(config.value("sliding_window", 512), config.value("sliding_window_pattern", kDefaultGlobalEvery), spec);
  if (config.contains("layer_types") && config["layer_types"].is_array() && int(config["layer_types"].size()) == spec->n_layers) {
    for (int l = 0; l < spec->n_layers; ++l) {
      if (config["layer_types"][size_t(l)] == "full_attention") spec->sliding_window[size_t(l)] = 0;
      else spec->sliding_window[size_t(l)] = config.value("sliding_window", 512);
    }
  }
}

}  // namespace

Architecture gemma3_architecture() {
  return {"gemma3", {"gemma3", "gemma3_text"}, gemma3_from_gguf, gemma3_from_hf, standard_gguf_names(), gemma_hf_names()};
}

}  // namespace tessera
