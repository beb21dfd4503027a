#pragma once
// The vocabulary of the backend op table: the enums and small parameter
// structs every backend's kernels share. Nothing here belongs to a device.
#include <cstdint>

#include "engine/tensor/dtype.h"

namespace tessera::ops {

enum class RopeStyle : uint8_t {
  kInterleaved,  // rotates pairs (2i, 2i+1)
  kHalves,       // rotates pairs (i, i + dim/2)
};

// How rotation angles are computed, which decides the last bits of a result.
enum class RopeNumerics : uint8_t {
  // ggml's: theta advances by repeated multiplication by base^(-2/dim), and
  // each output is one fused multiply-add (GGUF checkpoints, as llama.cpp).
  kGgml,
  // transformers': angle = inv_freq[i] * position in f32 from a table the
  // caller computed, each output two products and a sum, no fusing.
  kFrequencyTable,
};

struct RopeParams {
  RopeStyle style = RopeStyle::kHalves;
  RopeNumerics numerics = RopeNumerics::kGgml;
  int rotary_dim = 0;                   // leading dimensions of each head that rotate
  float freq_base = 10000.0f;           // kGgml
  float freq_scale = 1.0f;              // kGgml: linear position scaling (1 / factor)
  const float* freq_factors = nullptr;  // kGgml: per-pair divisors (Llama 3 scaling), or null
  const float* inv_freq = nullptr;      // kFrequencyTable: (rotary_dim / 2) frequencies
  // YaRN, kGgml: each pair's angle blends the scaled and the unscaled one by
  // a ramp over pairs [corr_low, corr_high], times ext_factor (0: none),
  // and the cosines and sines are scaled by attn_factor * (1 + 0.1 ln(1 /
  // freq_scale)). kFrequencyTable: the table holds the blend; cosines and
  // sines are scaled by attn_factor.
  float ext_factor = 0.0f;
  float corr_low = 0.0f, corr_high = 0.0f;
  float attn_factor = 1.0f;
  // Optional, for backends whose sine and cosine round otherwise than the
  // CPU's: (table_positions, rotary_dim / 2) cosines, then as many sines,
  // of each position's angles as ops::rope_angles gives them. Positions
  // past the table take the angles from the formula.
  const float* cos_table = nullptr;
  int32_t table_positions = 0;
};

enum class GatedActivation : uint8_t {
  kSilu,           // SwiGLU: silu(gate) * up
  kGeluTanh,       // GeGLU with the tanh approximation, evaluated exactly
  kGeluTanhTable,  // the same through a table over f16 inputs, as llama.cpp evaluates it
  // gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7),
  // g / (1 + exp(-1.702 g)) * (u + 1) (its constants, as llama.cpp and
  // transformers fix them).
  kSiluClampedOai,
};

// kSiluClampedOai's constants.
constexpr float kOaiSwiGluAlpha = 1.702f;
constexpr float kOaiSwiGluLimit = 7.0f;

enum class MaskMod : uint8_t {
  kCausal,         // key position <= query position
  kSlidingWindow,  // causal, and query - key < window
  kPrefixLm,       // causal, plus every key inside the sequence's prefix
};

enum class ScoreMod : uint8_t {
  kNone,
  kSoftcap,  // cap * tanh(score / cap)
  kAlibi,    // score + slope[head] * (key - query)
};

struct AttentionParams {
  MaskMod mask = MaskMod::kCausal;
  ScoreMod score = ScoreMod::kNone;
  float scale = 1.0f;                   // applied to q·k before the score modifier
  bool scale_queries = false;           // apply `scale` to the queries instead, before an f16 cache rounds them
  int window = 0;                       // kSlidingWindow
  float softcap = 0.0f;                 // kSoftcap
  const float* alibi_slopes = nullptr;  // kAlibi: one per query head
  // Grouped-query attention: query head h reads KV head
  // (h + query_head_offset) / query_group; query_group 0 means
  // n_heads / n_kv_heads. A tensor-parallel rank whose query heads start
  // inside a KV head's group sets the offset to that group's heads held by
  // earlier ranks (see QueryGroups in kernels/query_groups.h).
  int query_group = 0;
  int query_head_offset = 0;
  // Attention sinks (gpt-oss): one learned logit per query head that every
  // query's softmax includes with a zero value, so a query may attend to
  // nothing. Null: none.
  const float* sinks = nullptr;
};

// One layer's pages: `k` and `v` are [n_pages][page_size][n_kv_heads][head_dim].
// An int8 cache scales each token's row of each head by its own factor:
// element = int8 * scale, scales [n_pages][page_size][n_kv_heads]. Its keys
// are stored as H(k - k_center): centred on a constant per channel (the key
// projection's bias, where it has one) and, for power-of-two head sizes,
// rotated by the Walsh-Hadamard transform H (kernels/cpu/attention/hadamard.h). Both
// leave the attention scores as they were: H is orthonormal, and the centre
// adds q·k_center to all of a query's scores, which attention adds back.
struct PagedKv {
  const void* k;
  const void* v;
  DType dtype;  // kF32, kF16 or kI8
  int page_size;
  int n_kv_heads;
  int head_dim;
  const float* k_scales = nullptr;  // kI8 only
  const float* v_scales = nullptr;
  const float* k_center = nullptr;  // kI8, optional: [n_kv_heads][head_dim]
};

// The flattened batch in CSR form: what the scheduler's page tables give.
struct AttentionBatch {
  int n_seqs;
  const int32_t* query_start;           // [n_seqs + 1]: the tokens of sequence s are [query_start[s], query_start[s+1])
  const int32_t* positions;             // [n_tokens]: position of each query token in its sequence
  const int32_t* kv_len;                // [n_seqs]: keys in the cache for the sequence, new tokens included
  const int32_t* page_indptr;           // [n_seqs + 1]
  const int32_t* page_indices;          // pages of sequence s: page_indices[page_indptr[s] .. page_indptr[s+1])
  const int32_t* prefix_len = nullptr;  // [n_seqs], kPrefixLm only
};

}  // namespace tessera::ops
