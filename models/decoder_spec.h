#pragma once
// The typed description of a decoder-only transformer, filled once from GGUF
// metadata or a Hugging Face config.json by the model's architecture file.
// The generic decoder reads nothing else.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/rope.h"

namespace tessera {

struct RopeSpec {
  cpu::RopeStyle style = cpu::RopeStyle::kHalves;
  int dim = 0;                 // rotary dimensions per head (head_dim unless partial)
  float base = 10000.0f;       // full-attention layers
  float local_base = 0.0f;     // sliding-window layers, when they use another base (Gemma 3)
  float freq_scale = 1.0f;     // linear scaling: 1 / factor
  std::vector<float> freq_factors;  // per rotary pair, divides the frequency (Llama 3 scaling); empty: none
};

struct DecoderSpec {
  std::string architecture;
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int ffn_dim = 0;
  int vocab_size = 0;
  int max_context = 0;
  float norm_eps = 1e-5f;
  float norm_weight_offset = 0.0f;  // RMSNorm scales by (weight + offset)
  cpu::GatedActivation activation = cpu::GatedActivation::kSilu;
  RopeSpec rope;
  bool qkv_bias = false;
  bool qk_norm = false;               // RMSNorm on each query and key head
  bool post_attention_norm = false;   // norm on the attention output before the residual add
  bool post_ffn_norm = false;         // norm on the FFN output before the residual add
  bool tied_embeddings = false;       // output projection reuses the token embedding
  float embedding_scale = 1.0f;       // token embeddings are multiplied by this
  float attention_scale = 0.0f;       // 0: 1/sqrt(head_dim)
  bool scale_queries = false;         // scale queries before q·k (Gemma's GGUF graph), not the scores
  float attn_softcap = 0.0f;          // 0: none
  float final_logit_softcap = 0.0f;   // 0: none
  std::vector<int> sliding_window;    // per layer; 0 = full attention

  // Throws tessera::Error naming `source` when a field is missing or inconsistent.
  void validate(const std::string& source) const;
};

}  // namespace tessera
