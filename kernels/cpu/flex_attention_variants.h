#pragma once
// The attention kernel built for each instruction set; flex_attention()
// picks one at run time. All variants produce the same bits.
#include <vector>

#include "kernels/cpu/flex_attention.h"

namespace tessera::cpu {

constexpr int kQueryTile = 16;

// One tile of a sequence's queries against one KV head.
struct AttentionWorkItem {
  int seq;
  int token_begin, token_end;
  int kv_head;
};

void flex_attention_generic(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                            const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool);
void flex_attention_avx2(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                         const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool);

}  // namespace tessera::cpu
