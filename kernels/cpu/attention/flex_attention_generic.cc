// The attention kernel built for the baseline x86-64 instruction set.
#include "kernels/cpu/attention/flex_attention_impl.h"

namespace tessera::cpu {

void flex_attention_generic(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                       const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                       AttentionWorkspace& workspace) {
  run_items(items, q, n_heads, kv, batch, params, out, pool, workspace);
}

}  // namespace tessera::cpu
