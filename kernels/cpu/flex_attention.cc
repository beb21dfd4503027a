#include "kernels/cpu/flex_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/error.h"
#include "engine/tensor/half.h"

namespace tessera::cpu {
namespace {

constexpr int kQueryTile = 16;

// Every mask here admits one contiguous key range per query: [first, last].
struct CausalMask {
  int first(int) const { return 0; }
  int last(int q, int) const { return q; }
};
struct SlidingWindowMask {
  int window;
  int first(int q) const { return std::max(0, q - window + 1); }
  int last(int q, int) const { return q; }
};
struct PrefixLmMask {
  int first(int) const { return 0; }
  int last(int q, int prefix) const { return std::max(q, prefix - 1); }
};

struct NoScoreMod {
  float operator()(float s, int, int, int) const { return s; }
};
struct SoftcapMod {
  float cap;
  float operator()(float s, int, int, int) const { return cap * std::tanh(s / cap); }
};
struct AlibiMod {
  const float* slopes;
  float operator()(float s, int head, int q, int k) const { return s + slopes[head] * float(k - q); }
};

struct WorkItem {
  int seq;
  int token_begin, token_end;
  int kv_head;
};

void load_rows(const PagedKv& kv, const void* pool, int page, int kv_head, int rows, float* dst) {
  const size_t elems_per_row = size_t(kv.n_kv_heads) * size_t(kv.head_dim);
  const size_t first = (size_t(page) * size_t(kv.page_size)) * elems_per_row + size_t(kv_head) * size_t(kv.head_dim);
  for (int r = 0; r < rows; ++r) {
    const size_t offset = first + size_t(r) * elems_per_row;
    float* out = dst + size_t(r) * size_t(kv.head_dim);
    if (kv.dtype == DType::kF32) {
      std::memcpy(out, static_cast<const float*>(pool) + offset, size_t(kv.head_dim) * sizeof(float));
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(pool) + offset;
      for (int d = 0; d < kv.head_dim; ++d) out[d] = f16_to_f32(src[d]);
    }
  }
}

// Running softmax state of one (query token, head) row.
struct RowState {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
};

template <class Mask, class Score>
void attend(const WorkItem& item, const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
            const AttentionParams& params, const Mask& mask, const Score& score_mod, float* out) {
  const int group = n_heads / kv.n_kv_heads;
  const int dim = kv.head_dim;
  const int n_rows = (item.token_end - item.token_begin) * group;
  const int prefix = batch.prefix_len ? batch.prefix_len[item.seq] : 0;
  std::vector<float> acc(size_t(n_rows) * size_t(dim), 0.0f);
  std::vector<RowState> state(static_cast<size_t>(n_rows));
  std::vector<float> keys(static_cast<size_t>(kv.page_size) * size_t(dim)), values(keys.size()),
      scores(static_cast<size_t>(kv.page_size));
  // Union of the key ranges the tile's queries may see, for page skipping.
  int tile_first = std::numeric_limits<int>::max(), tile_last = -1;
  for (int t = item.token_begin; t < item.token_end; ++t) {
    tile_first = std::min(tile_first, mask.first(batch.positions[t]));
    tile_last = std::max(tile_last, mask.last(batch.positions[t], prefix));
  }
  const int kv_len = batch.kv_len[item.seq];
  const int n_pages = batch.page_indptr[item.seq + 1] - batch.page_indptr[item.seq];
  for (int p = 0; p < n_pages; ++p) {
    const int page_first = p * kv.page_size;
    const int rows = std::min(kv.page_size, kv_len - page_first);
    if (rows <= 0) break;
    if (page_first + rows - 1 < tile_first || page_first > tile_last) continue;  // wholly masked
    const int page = batch.page_indices[batch.page_indptr[item.seq] + p];
    load_rows(kv, kv.k, page, item.kv_head, rows, keys.data());
    load_rows(kv, kv.v, page, item.kv_head, rows, values.data());
    for (int t = item.token_begin; t < item.token_end; ++t) {
      const int pos = batch.positions[t];
      const int k_lo = std::max(page_first, mask.first(pos)), k_hi = std::min(page_first + rows - 1, mask.last(pos, prefix));
      if (k_lo > k_hi) continue;
      for (int g = 0; g < group; ++g) {
        const int head = item.kv_head * group + g;
        const float* qv = q + (size_t(t) * size_t(n_heads) + size_t(head)) * size_t(dim);
        const int row = (t - item.token_begin) * group + g;
        float page_max = -std::numeric_limits<float>::infinity();
        for (int k = k_lo; k <= k_hi; ++k) {
          const float* kvec = keys.data() + size_t(k - page_first) * size_t(dim);
          float dot = 0.0f;
          for (int d = 0; d < dim; ++d) dot += qv[d] * kvec[d];
          const float s = score_mod(dot * params.scale, head, pos, k);
          scores[size_t(k - page_first)] = s;
          page_max = std::max(page_max, s);
        }
        RowState& st = state[size_t(row)];
        float* a = acc.data() + size_t(row) * size_t(dim);
        if (page_max > st.max) {
          const float rescale = std::exp(st.max - page_max);  // 0 on the first page
          st.sum *= rescale;
          for (int d = 0; d < dim; ++d) a[d] *= rescale;
          st.max = page_max;
        }
        for (int k = k_lo; k <= k_hi; ++k) {
          const float w = std::exp(scores[size_t(k - page_first)] - st.max);
          st.sum += w;
          const float* vvec = values.data() + size_t(k - page_first) * size_t(dim);
          for (int d = 0; d < dim; ++d) a[d] += w * vvec[d];
        }
      }
    }
  }
  for (int t = item.token_begin; t < item.token_end; ++t) {
    for (int g = 0; g < group; ++g) {
      const int head = item.kv_head * group + g;
      const int row = (t - item.token_begin) * group + g;
      const float inv = state[size_t(row)].sum > 0.0f ? 1.0f / state[size_t(row)].sum : 0.0f;
      float* o = out + (size_t(t) * size_t(n_heads) + size_t(head)) * size_t(dim);
      const float* a = acc.data() + size_t(row) * size_t(dim);
      for (int d = 0; d < dim; ++d) o[d] = a[d] * inv;
    }
  }
}

template <class Mask, class Score>
void run_all(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
             const AttentionParams& params, const Mask& mask, const Score& score, float* out, ThreadPool& pool) {
  pool.parallel_for(int64_t(items.size()), 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) attend(items[size_t(i)], q, n_heads, kv, batch, params, mask, score, out);
  });
}

template <class Mask>
void dispatch_score(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                    const AttentionBatch& batch, const AttentionParams& params, const Mask& mask, float* out,
                    ThreadPool& pool) {
  switch (params.score) {
    case ScoreMod::kNone: return run_all(items, q, n_heads, kv, batch, params, mask, NoScoreMod{}, out, pool);
    case ScoreMod::kSoftcap: return run_all(items, q, n_heads, kv, batch, params, mask, SoftcapMod{params.softcap}, out, pool);
    case ScoreMod::kAlibi: return run_all(items, q, n_heads, kv, batch, params, mask, AlibiMod{params.alibi_slopes}, out, pool);
  }
}

}  // namespace

void flex_attention(const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
                    const AttentionParams& params, float* out, ThreadPool& pool) {
  if (kv.n_kv_heads <= 0 || n_heads % kv.n_kv_heads != 0) throw Error("attention: query heads not a multiple of KV heads");
  if (kv.dtype != DType::kF32 && kv.dtype != DType::kF16) throw Error("attention: KV cache must be F32 or F16");
  if (params.score == ScoreMod::kAlibi && !params.alibi_slopes) throw Error("attention: ALiBi needs slopes");
  if (params.score == ScoreMod::kSoftcap && !(params.softcap > 0.0f)) throw Error("attention: softcap must be positive");
  std::vector<WorkItem> items;
  for (int s = 0; s < batch.n_seqs; ++s) {
    for (int t = batch.query_start[s]; t < batch.query_start[s + 1]; t += kQueryTile) {
      for (int h = 0; h < kv.n_kv_heads; ++h) items.push_back({s, t, std::min(t + kQueryTile, batch.query_start[s + 1]), h});
    }
  }
  switch (params.mask) {
    case MaskMod::kCausal: return dispatch_score(items, q, n_heads, kv, batch, params, CausalMask{}, out, pool);
    case MaskMod::kSlidingWindow:
      if (params.window <= 0) throw Error("attention: sliding window must be positive");
      return dispatch_score(items, q, n_heads, kv, batch, params, SlidingWindowMask{params.window}, out, pool);
    case MaskMod::kPrefixLm: return dispatch_score(items, q, n_heads, kv, batch, params, PrefixLmMask{}, out, pool);
  }
}

}  // namespace tessera::cpu
