#pragma once
// The typed description of a decoder-only transformer, filled once from GGUF
// metadata or a Hugging Face config.json by the model's architecture file.
// The generic decoder reads nothing else. Device-free: model-level enums only.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_types.h"

namespace tessera {

// Which dimensions of a head rotate together.
enum class RotaryPairing : uint8_t {
  kAdjacent,  // (2i, 2i+1): llama.cpp's converter permutes Llama Q/K this way
  kHalves,    // (i, i + dim/2): Hugging Face, NeoX, Gemma, Qwen
};

// Whose arithmetic the rotation angles follow, to the last bit.
enum class RopeRecipe : uint8_t {
  kGgml,          // GGUF checkpoints, compared with llama.cpp
  kTransformers,  // Hugging Face checkpoints, compared with transformers (inv_freq tables)
};

enum class FfnActivation : uint8_t {
  kSwiGlu,          // silu(gate) * up
  kGeGluTanh,       // gelu_tanh(gate) * up, evaluated exactly
  kGeGluTanhTable,  // the same through llama.cpp's f16 table
  kSwiGluClampedOai,  // gpt-oss's clamped SwiGLU (ops::GatedActivation::kSiluClampedOai)
};

struct RopeSpec {
  RotaryPairing pairing = RotaryPairing::kHalves;
  RopeRecipe recipe = RopeRecipe::kGgml;
  int dim = 0;                 // rotary dimensions per head (head_dim unless partial)
  float base = 10000.0f;       // full-attention layers
  float local_base = 0.0f;     // sliding-window layers, when they use another base (Gemma 3)
  float freq_scale = 1.0f;     // kGgml: linear scaling, 1 / factor
  std::vector<float> freq_factors;    // kGgml: per rotary pair, divides the frequency (Llama 3 scaling); empty: none
  std::vector<float> inv_freq;        // kTransformers: (dim / 2) frequencies of full-attention layers
  std::vector<float> local_inv_freq;  // kTransformers: those of sliding-window layers with local_base
  // YaRN (ops::RopeParams): kGgml blends by ext_factor over pairs
  // [corr_low, corr_high]; both recipes scale cosines and sines by attn_factor.
  float ext_factor = 0.0f;
  float corr_low = 0.0f, corr_high = 0.0f;
  float attn_factor = 1.0f;
};

// A mixture-of-experts FFN on every layer: a router scores the experts for
// each token, the top_k best run (each an FFN of ffn_dim channels with the
// spec's activation), and their outputs are summed with the router's
// softmax weights. n_experts == 0: a dense FFN.
struct MoeSpec {
  int n_experts = 0;
  int top_k = 0;
  bool normalize_weights = false;  // the chosen experts' weights are rescaled to sum to 1
  bool biases = false;             // the router and every expert's projections carry biases
  // A shared expert (0: none): a gated FFN of this width that runs on every
  // token, its output scaled by the sigmoid of a one-row gate and added to
  // the chosen experts' (Qwen2-MoE).
  int shared_ffn_dim = 0;
};

struct DecoderSpec {
  std::string architecture;
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int ffn_dim = 0;                    // an MoE layer's: each expert's
  int vocab_size = 0;
  int max_context = 0;
  float norm_eps = 1e-5f;
  float norm_weight_offset = 0.0f;  // RMSNorm scales by (weight + offset)
  FfnActivation activation = FfnActivation::kSwiGlu;
  RopeSpec rope;
  bool qkv_bias = false;              // biases on the Q, K and V projections
  bool o_bias = false;                // bias on the attention output projection
  bool mlp_bias = false;              // biases on gate, up and down
  bool qk_norm = false;               // RMSNorm on each query and key head
  bool post_attention_norm = false;   // norm on the attention output before the residual add
  bool post_ffn_norm = false;         // norm on the FFN output before the residual add
  bool tied_embeddings = false;       // output projection reuses the token embedding
  float embedding_scale = 1.0f;       // token embeddings are multiplied by this
  float attention_scale = 0.0f;       // 0: 1/sqrt(head_dim)
  bool scale_queries = false;         // scale queries before q·k (Gemma's GGUF graph), not the scores
  float attn_softcap = 0.0f;          // 0: none
  float final_logit_softcap = 0.0f;   // 0: none
  bool attention_sinks = false;       // a learned logit per head in each softmax (ops::AttentionParams::sinks)
  std::vector<int> sliding_window;    // per layer; 0 = full attention
  MoeSpec moe;

  // Throws tessera::Error naming `source` when a field is missing or inconsistent.
  void validate(const std::string& source) const;
};

// The gated activation op that evaluates `a`.
ops::GatedActivation gated_activation_op(FfnActivation a);

}  // namespace tessera
