// The attention kernel built for AVX-512 (with AVX2/FMA/F16C): 16-lane sums
// in one register where the AVX2 build pairs two, the same bits.
#include "kernels/cpu/attention/flex_attention_impl.h"

namespace tessera::cpu {

void flex_attention_avx512(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                           const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                           AttentionWorkspace& workspace) {
  run_items(items, q, n_heads, kv, batch, params, out, pool, workspace);
}

}  // namespace tessera::cpu
