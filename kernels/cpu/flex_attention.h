#pragma once
// FlexAttention-style attention over a paged KV cache: one kernel family,
// specialised at compile time for a mask modifier (which keys a query may
// see) and a score modifier (how a raw score is transformed). Queries are
// processed in tiles against whole KV pages; pages that no query in the tile
// can see are skipped (block sparsity). The same code serves decode (one
// query per sequence) and chunked prefill.
#include <cstdint>

#include "engine/tensor/dtype.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::cpu {

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
  float scale = 1.0f;       // applied to q·k before the score modifier
  bool scale_queries = false;  // apply `scale` to the queries instead, before an f16 cache rounds them
  int window = 0;           // kSlidingWindow
  float softcap = 0.0f;     // kSoftcap
  const float* alibi_slopes = nullptr;  // kAlibi: one per query head
};

// One layer's paged cache: `k` and `v` are [n_pages][page_size][n_kv_heads][head_dim].
struct PagedKv {
  const void* k;
  const void* v;
  DType dtype;  // kF32 or kF16
  int page_size;
  int n_kv_heads;
  int head_dim;
};

// The flattened batch, in the CSR form the scheduler's block tables give.
struct AttentionBatch {
  int n_seqs;
  const int32_t* query_start;  // [n_seqs + 1]: the tokens of sequence s are [query_start[s], query_start[s+1])
  const int32_t* positions;    // [n_tokens]: position of each query token in its sequence
  const int32_t* kv_len;       // [n_seqs]: keys in the cache for the sequence, new tokens included
  const int32_t* page_indptr;  // [n_seqs + 1]
  const int32_t* page_indices; // pages of sequence s: page_indices[page_indptr[s] .. page_indptr[s+1])
  const int32_t* prefix_len = nullptr;  // [n_seqs], kPrefixLm only
};

// q and out: [n_tokens][n_heads][head_dim], f32. n_heads is a multiple of
// kv.n_kv_heads (grouped-query attention).
// `isa` picks the kernel build; every build gives the same bits.
void flex_attention(const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
                    const AttentionParams& params, float* out, ThreadPool& pool, const IsaFeatures& isa);

}  // namespace tessera::cpu
