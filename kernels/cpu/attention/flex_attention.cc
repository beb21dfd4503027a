#include "kernels/cpu/attention/flex_attention.h"

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/attention/flex_attention_variants.h"
#include "kernels/cpu/runtime/isa.h"
#include "kernels/query_groups.h"

namespace tessera::cpu {

void plan_attention_items(const AttentionBatch& batch, int n_kv_heads, std::vector<AttentionWorkItem>& items) {
  items.clear();
  for (int s = 0; s < batch.n_seqs; ++s) {
    for (int t = batch.query_start[s]; t < batch.query_start[s + 1]; t += kQueryTile) {
      for (int h = 0; h < n_kv_heads; ++h) items.push_back({s, t, std::min(t + kQueryTile, batch.query_start[s + 1]), h});
    }
  }
}

void run_attention_items(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                         const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                         const IsaFeatures& isa, AttentionWorkspace& workspace) {
  std::string why;
  ops::query_groups(n_heads, kv.n_kv_heads, params, &why);
  if (!why.empty()) throw Error("attention: " + why);
  if (kv.dtype != DType::kF32 && kv.dtype != DType::kF16 && kv.dtype != DType::kI8) {
    throw Error("attention: KV cache must be F32, F16 or I8");
  }
  if (kv.dtype == DType::kI8 && (!kv.k_scales || !kv.v_scales)) throw Error("attention: an int8 KV cache needs its scales");
  if (params.score == ScoreMod::kAlibi && !params.alibi_slopes) throw Error("attention: ALiBi needs slopes");
  if (params.score == ScoreMod::kSoftcap && !(params.softcap > 0.0f)) throw Error("attention: softcap must be positive");
  if (params.mask == MaskMod::kSlidingWindow && params.window <= 0) throw Error("attention: sliding window must be positive");
  if (workspace.threads.size() < size_t(pool.size())) throw Error("attention: scratch for fewer threads than the pool has");
  if (isa.avx2 && isa.fma && isa.f16c && isa.avx512f) {
    flex_attention_avx512(items, q, n_heads, kv, batch, params, out, pool, workspace);
  } else if (isa.avx2 && isa.fma && isa.f16c) {
    flex_attention_avx2(items, q, n_heads, kv, batch, params, out, pool, workspace);
  } else {
    flex_attention_generic(items, q, n_heads, kv, batch, params, out, pool, workspace);
  }
}

void flex_attention(const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
                    const AttentionParams& params, float* out, ThreadPool& pool, const IsaFeatures& isa) {
  std::vector<AttentionWorkItem> items;
  plan_attention_items(batch, kv.n_kv_heads, items);
  AttentionWorkspace workspace(pool.size());
  run_attention_items(items, q, n_heads, kv, batch, params, out, pool, isa, workspace);
}

}  // namespace tessera::cpu
