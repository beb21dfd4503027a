#pragma once
// The flex attention kernel body, compiled once per instruction set (see
// flex_attention_generic.cc and flex_attention_avx2.cc): the same source and
// the same order of operations, so every build gives the same bits.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention/flex_attention_passes.h"
#include "kernels/cpu/attention/flex_attention_score_pass.h"
#include "kernels/cpu/attention/flex_attention_split.h"
#include "kernels/cpu/attention/flex_attention_variants.h"
#include "kernels/query_groups.h"

// Internal linkage: each including file gets its own copy, built with its own
// instruction-set flags.
namespace tessera::cpu {
namespace {

#if defined(__AVX512F__)
constexpr int kMinRowsForKeyBlocks = 8;

// `n` floats of `buffer` from a 64-byte boundary.
float* aligned_scratch_floats(std::vector<float>& buffer, size_t n) {
  float* p = scratch_floats(buffer, n + kLanes);
  return p + (kLanes - (reinterpret_cast<uintptr_t>(p) / sizeof(float)) % kLanes) % kLanes;
}

// The score pass on AVX-512, sixteen keys at a time: every visible page's
// keys are transposed once into blocks of 16 (a block never crosses a
// page), then pairs of blocks meet pairs of query rows. Writes the scores of
// visible keys into weights and sets row_max, as the general pass does.
template <class Mask, class Score>
void score_in_blocks(const WorkItem& item, int head0, int head_count, const float* queries, const float* offsets,
                     const PagedKv& kv, const AttentionBatch& batch, const Mask& mask, const Score& score_mod,
                     float score_scale, int prefix, int span_first, int span_last, float* weights, float* row_max,
                     AttentionScratch& scratch, auto&& for_each_page) {
  const int dim = kv.head_dim, span = span_last - span_first + 1;
  // Blocks: keys_t[block][d][16]; block b holds keys key_blocks[2b] .. + key_blocks[2b + 1] - 1.
  int n_blocks = 0;
  for_each_page([&](int, int, int page_rows) { n_blocks += (page_rows + kKeyBlock - 1) / kKeyBlock; });
  const size_t block_floats = size_t(kKeyBlock) * size_t(dim);
  float* const keys_t = aligned_scratch_floats(scratch.keys_t, size_t(n_blocks) * block_floats);
  if (scratch.key_blocks.size() < size_t(2 * n_blocks)) scratch.key_blocks.resize(size_t(2 * n_blocks));
  int* const key_blocks = scratch.key_blocks.data();
  float* const rows = scratch_floats(scratch.rows, size_t(kv.page_size) * size_t(dim));
  int b = 0;
  for_each_page([&](int page, int page_first, int page_rows) {
    load_rows(kv, kv.k, kv.k_scales, page, item.kv_head, 0, page_rows, rows);
    for (int first = 0; first < page_rows; first += kKeyBlock, ++b) {
      const int n = std::min(kKeyBlock, page_rows - first);
      transpose_key_block(rows + size_t(first) * size_t(dim), n, dim, keys_t + size_t(b) * block_floats);
      key_blocks[2 * b] = page_first + first;
      key_blocks[2 * b + 1] = n;
    }
  });
  const int n_rows = (item.token_end - item.token_begin) * head_count;
  // Each row's running maximum, lane by lane: [row][16].
  float* const max_lanes = aligned_scratch_floats(scratch.max_lanes, size_t(n_rows) * kLanes);
  for (int r = 0; r < n_rows; ++r) _mm512_store_ps(max_lanes + size_t(r) * kLanes, _mm512_set1_ps(row_max[r]));
  for (int b0 = 0; b0 < n_blocks; b0 += 2) {
    const int n_b = std::min(2, n_blocks - b0);
    const float* block[2] = {keys_t + size_t(b0) * block_floats, keys_t + size_t(b0 + n_b - 1) * block_floats};
    for (int r0 = 0; r0 < n_rows; r0 += 2) {
      const int pair = std::min(2, n_rows - r0);
      __mmask16 visible[2][2] = {};
      for (int i = 0; i < pair; ++i) {
        const int pos = batch.positions[item.token_begin + (r0 + i) / head_count];
        const int lo = mask.first(pos), hi = std::min(span_last, mask.last(pos, prefix));
        for (int j = 0; j < n_b; ++j) {
          const int first = key_blocks[2 * (b0 + j)], n = key_blocks[2 * (b0 + j) + 1];
          visible[i][j] = visible_lanes(first, lo, std::min(hi, first + n - 1));
        }
      }
      if (!(visible[0][0] | visible[0][1] | visible[1][0] | visible[1][1])) continue;
      const float* q[2] = {queries + size_t(r0) * size_t(dim), queries + size_t(r0 + pair - 1) * size_t(dim)};
      __m512 dots[2][2];
      if (pair == 2 && n_b == 2) key_block_dots<2, 2>(q, block, dim, dots);
      else if (pair == 2) key_block_dots<2, 1>(q, block, dim, dots);
      else if (n_b == 2) key_block_dots<1, 2>(q, block, dim, dots);
      else key_block_dots<1, 1>(q, block, dim, dots);
      for (int i = 0; i < pair; ++i) {
        const int r = r0 + i;
        float* const max = max_lanes + size_t(r) * kLanes;
        for (int j = 0; j < n_b; ++j) {
          if (!visible[i][j]) continue;
          const int first = key_blocks[2 * (b0 + j)];
          __m512 s = _mm512_mul_ps(_mm512_add_ps(dots[i][j], _mm512_set1_ps(offsets[r])), _mm512_set1_ps(score_scale));
          if constexpr (!std::is_same_v<Score, NoScoreMod>) {
            alignas(64) float lanes[kKeyBlock];
            _mm512_store_ps(lanes, s);
            const int head = head0 + r % head_count, pos = batch.positions[item.token_begin + r / head_count];
            for (int l = 0; l < kKeyBlock; ++l) {
              if (visible[i][j] >> l & 1) lanes[l] = score_mod(lanes[l], head, pos, first + l);
            }
            s = _mm512_load_ps(lanes);
          }
          _mm512_mask_storeu_ps(weights + size_t(r) * size_t(span) + (first - span_first), visible[i][j], s);
          const __m512 m = _mm512_load_ps(max);
          _mm512_store_ps(max, _mm512_mask_max_ps(m, visible[i][j], m, s));
        }
      }
    }
  }
  for (int r = 0; r < n_rows; ++r) row_max[r] = _mm512_reduce_max_ps(_mm512_load_ps(max_lanes + size_t(r) * kLanes));
}
#endif

// Attention for one tile of a sequence's queries and one KV head, in three
// passes over the visible pages: scores and their row maxima, normalised
// probabilities, then the weighted sum of values. With an f16 cache the
// queries and the probabilities are rounded to f16 before they meet the f16
// keys and values, the arithmetic of an f16 matrix multiply. An int8 cache
// is read back as f32 (int8 times its row's scale) and meets f32 queries.
// The item's query heads are [head0, head0 + head_count), all reading its KV head.
template <class Mask, class Score>
void attend(const WorkItem& item, int head0, int head_count, const float* q, int n_heads, const PagedKv& kv,
            const AttentionBatch& batch, const AttentionParams& params, const Mask& mask, const Score& score_mod, float* out,
            AttentionScratch& scratch) {
  const ItemView<Mask> view(item, head0, head_count, kv, batch, mask);
  const int dim = kv.head_dim, n_rows = view.n_rows, span = view.span.size();
  float* const queries = scratch_floats(scratch.queries, size_t(n_rows) * size_t(dim));
  float* const offsets = scratch_floats(scratch.offsets, size_t(n_rows));
  prepare_queries(view, q, n_heads, params, queries, offsets);
  const float score_scale = params.scale_queries ? 1.0f : params.scale;
  // weights[r][k - span.first]: the score, then the probability.
  // Only the scores of visible keys are written, and only they are read.
  // One block of slack before the first row: a block of 16 keys may start
  // before the span, its lanes there masked off.
  float* const weights = scratch_floats(scratch.weights, size_t(n_rows) * size_t(std::max(span, 0)) + kLanes) + kLanes;
  float* const row_max = scratch_floats(scratch.row_max, size_t(n_rows));
  std::fill_n(row_max, n_rows, -std::numeric_limits<float>::infinity());
#if defined(__AVX512F__)
  // Transposing the keys pays off once enough rows share them; a decode
  // step's few rows read them where they lie.
  const bool in_blocks = dim % kLanes == 0 && n_rows >= kMinRowsForKeyBlocks;
  if (in_blocks) {
    score_in_blocks(item, head0, head_count, queries, offsets, kv, batch, mask, score_mod, score_scale, view.prefix,
                    view.span.first, view.span.last, weights, row_max, scratch,
                    [&](auto&& body) { view.for_each_page(view.span.first, view.span.last, body); });
  }
#else
  const bool in_blocks = false;
#endif
  if (!in_blocks) {
    float* const rows = scratch_floats(scratch.rows, score_rows_floats(kv));
    score_rows(view, queries, offsets, score_mod, score_scale, view.span.first, view.span.last, weights, row_max, rows);
  }
  for (int r = 0; r < n_rows; ++r) {
    int lo, hi;
    view.row_keys(r, &lo, &hi);
    float sink;
    const float max = max_with_sink(row_max[size_t(r)], params, view.head(r), &sink);
    normalise_row(weights + size_t(r) * size_t(span), view.span.first, lo, hi, max, kv.dtype == DType::kF16, sink);
  }
  const LaneValues values(scratch_floats(scratch.values, LaneValues::floats(view.span.first, view.span.last, dim)),
                          view.span.first, view.span.last, dim);
  gather_values(view, values, view.span.first, view.span.last);
  float* const acc = scratch_floats(scratch.acc, size_t(kValueRows) * kLanes * kValueChunk);
  weigh_values(view, weights, values, 0, head_count, 0, dim, n_heads, acc, out);
}

template <class Mask, class Score>
void run_all(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
             const AttentionParams& params, const Mask& mask, const Score& score, float* out, ThreadPool& pool,
             AttentionWorkspace& workspace) {
  std::string why;
  const ops::QueryGroups groups = ops::query_groups(n_heads, kv.n_kv_heads, params, &why);
  if (split_pays(items, batch, mask, groups.group, pool.size())) {
    return run_split(items, q, n_heads, kv, batch, params, mask, score, groups, out, pool, workspace);
  }
  // Items differ in cost (a causal tile late in a prompt sees more keys), so
  // threads claim them one at a time, costliest (last) first. Each item
  // writes its own outputs: the order changes no result. With fewer items
  // than threads (decode with few KV heads), each item's query heads are
  // split into parts the threads share; every part reads the keys itself.
  AttentionScratch* const scratch = workspace.threads.data();
  const int64_t n_items = int64_t(items.size());
  const int parts =
      n_items > 0 && n_items < pool.size() ? int(std::min<int64_t>(groups.group, (pool.size() + n_items - 1) / n_items)) : 1;
  const int64_t n = n_items * parts;
  std::atomic<int64_t> next{0};
  pool.parallel_for(std::min<int64_t>(n, pool.size()), 1, [&](int chunk, int64_t, int64_t) {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      const int64_t work = n - 1 - i;
      const int part = int(work % parts);
      const WorkItem& item = items[size_t(work / parts)];
      const int first = groups.first(item.kv_head), count = groups.end(item.kv_head) - first;
      const int begin = first + count * part / parts, end = first + count * (part + 1) / parts;
      if (end > begin) attend(item, begin, end - begin, q, n_heads, kv, batch, params, mask, score, out, scratch[chunk]);
    }
  });
}

template <class Mask>
void dispatch_score(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                    const AttentionBatch& batch, const AttentionParams& params, const Mask& mask, float* out,
                    ThreadPool& pool, AttentionWorkspace& workspace) {
  switch (params.score) {
    case ScoreMod::kNone: return run_all(items, q, n_heads, kv, batch, params, mask, NoScoreMod{}, out, pool, workspace);
    case ScoreMod::kSoftcap: return run_all(items, q, n_heads, kv, batch, params, mask, SoftcapMod{params.softcap}, out, pool, workspace);
    case ScoreMod::kAlibi: return run_all(items, q, n_heads, kv, batch, params, mask, AlibiMod{params.alibi_slopes}, out, pool, workspace);
  }
}

// Runs every work item; the public entry point has checked the arguments.
inline void run_items(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                      const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                      AttentionWorkspace& workspace) {
  switch (params.mask) {
    case MaskMod::kCausal: return dispatch_score(items, q, n_heads, kv, batch, params, CausalMask{}, out, pool, workspace);
    case MaskMod::kSlidingWindow:
      return dispatch_score(items, q, n_heads, kv, batch, params, SlidingWindowMask{params.window}, out, pool, workspace);
    case MaskMod::kPrefixLm: return dispatch_score(items, q, n_heads, kv, batch, params, PrefixLmMask{}, out, pool, workspace);
  }
}


}  // namespace
}  // namespace tessera::cpu
