#pragma once
// The attention kernel built for each instruction set; flex_attention()
// picks one at run time. All variants produce the same bits.
#include <vector>

#include "kernels/cpu/attention/flex_attention.h"

namespace tessera::cpu {

void flex_attention_generic(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                            const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                            AttentionWorkspace& workspace);
void flex_attention_avx2(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                         const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                         AttentionWorkspace& workspace);
void flex_attention_avx512(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                           const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                           AttentionWorkspace& workspace);

}  // namespace tessera::cpu
