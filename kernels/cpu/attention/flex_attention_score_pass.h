#pragma once
// The score pass of the flex attention kernel, row by row: each query row's
// scores against the keys it sees, read in the cache where the kernel can
// widen them in registers, else widened page by page into scratch, and each
// row's running maximum. Compiled once per instruction set with the kernel
// body (flex_attention_impl.h).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/attention/flex_attention_passes.h"
#include "kernels/cpu/attention/lane_sum.h"

// Internal linkage, as in flex_attention_impl.h: each build its own copy.
namespace tessera::cpu {
namespace {

// The keys of one page as the score pass reads them: in the cache itself
// where the kernel can widen them in registers (f32; f16 with F16C), else
// converted into `buffer` (int8, and f16 without F16C).
struct PageKeys {
  const PagedKv& kv;
  const float* buffer;  // [row][head_dim], when converted
  const void* in_place = nullptr;  // row 0 of the page in the pool
  size_t stride = 0;  // elements between rows in place

  static bool read_in_place(const PagedKv& kv) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    return kv.dtype == DType::kF32 || kv.dtype == DType::kF16;
#else
    return kv.dtype == DType::kF32;
#endif
  }

  // The page's keys read where they lie in `pool`.
  static PageKeys in_cache(const PagedKv& kv, const void* pool, int page, int kv_head) {
    return {kv, nullptr, static_cast<const uint8_t*>(pool) + page_offset(kv, page, kv_head) * kv_element_bytes(kv),
            size_t(kv.n_kv_heads) * size_t(kv.head_dim)};
  }

  // Dots of q with the page's rows r .. r + 7.
  void dot8(const float* q, int r, int dim, float* out) const {
    if (!in_place) return lane16_dot8(q, buffer + size_t(r) * size_t(dim), size_t(dim), dim, out);
    if (kv.dtype == DType::kF32) return lane16_dot8(q, static_cast<const float*>(in_place) + size_t(r) * stride, stride, dim, out);
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    lane16_dot8(q, static_cast<const uint16_t*>(in_place) + size_t(r) * stride, stride, dim, out);
#endif
  }

#if defined(__AVX2__) && defined(__FMA__)
  // dot8's sums as one vector.
  __attribute__((always_inline)) __m256 dot8_vector(const float* q, int r, int dim) const {
    if (!in_place) return lane16_dot8_vector(q, buffer + size_t(r) * size_t(dim), size_t(dim), dim);
#if defined(__F16C__)
    if (kv.dtype == DType::kF16) return lane16_dot8_vector(q, static_cast<const uint16_t*>(in_place) + size_t(r) * stride, stride, dim);
#endif
    return lane16_dot8_vector(q, static_cast<const float*>(in_place) + size_t(r) * stride, stride, dim);
  }

  // dot8_vector for kRows queries, each row of keys loaded once for all.
  template <int kRows>
  __attribute__((always_inline)) void dot8_rows(const float* const* q, int r, int dim, __m256 (&sums)[kRows]) const {
    if (!in_place) return lane16_dot8_rows(q, buffer + size_t(r) * size_t(dim), size_t(dim), dim, sums);
#if defined(__F16C__)
    if (kv.dtype == DType::kF16) return lane16_dot8_rows(q, static_cast<const uint16_t*>(in_place) + size_t(r) * stride, stride, dim, sums);
#endif
    lane16_dot8_rows(q, static_cast<const float*>(in_place) + size_t(r) * stride, stride, dim, sums);
  }
#endif

  // The dot of q with row r; `row` holds dim floats for a row in f16.
  float dot(const float* q, int r, int dim, float* row) const {
    if (!in_place) return ordered_dot(q, buffer + size_t(r) * size_t(dim), dim);
    if (kv.dtype == DType::kF32) return ordered_dot(q, static_cast<const float*>(in_place) + size_t(r) * stride, dim);
    const uint16_t* src = static_cast<const uint16_t*>(in_place) + size_t(r) * stride;
    for (int d = 0; d < dim; ++d) row[d] = f16_to_f32(src[d]);
    return ordered_dot(q, row, dim);
  }
};

constexpr int kMinRowsToWidenKeys = 8;

#if defined(__AVX2__) && defined(__FMA__)
// Scores (dot + offset) * scale of keys *k, *k + 1, ... in runs of eight
// while a whole run lies within hi, for kRows query rows that see the same
// keys (the heads of one token): q[i], offsets[i], out[i] (the first key's
// score first) and max[i] (the running maximum) are row i's; `row` is *k's
// row in `keys`. Several rows read each run of keys once (dot8_rows); one
// row keeps its query in registers (dot8_vector). Advances *k past the runs.
template <int kRows>
inline void score_runs_of_eight(const PageKeys& keys, const float* const* q, const float* offsets, float scale, int row, int hi,
                                int dim, float* const* out, float* max, int* k) {
  __m256 max8[kRows], offset8[kRows];
  for (int i = 0; i < kRows; ++i) max8[i] = _mm256_set1_ps(max[i]), offset8[i] = _mm256_set1_ps(offsets[i]);
  const __m256 scale8 = _mm256_set1_ps(scale);
  int key = *k, done = 0;  // a local: through the pointer it went to memory every run
  for (; key + 8 <= hi + 1; key += 8, row += 8, done += 8) {
    __m256 dots[kRows];
    if constexpr (kRows == 1) dots[0] = keys.dot8_vector(q[0], row, dim);
    else keys.dot8_rows<kRows>(q, row, dim, dots);
    for (int i = 0; i < kRows; ++i) {
      const __m256 s = _mm256_mul_ps(_mm256_add_ps(dots[i], offset8[i]), scale8);
      _mm256_storeu_ps(out[i] + done, s);
      max8[i] = _mm256_max_ps(s, max8[i]);  // the second operand where the first is NaN
    }
  }
  *k = key;
  for (int i = 0; i < kRows; ++i) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(max8[i]), _mm256_extractf128_ps(max8[i], 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    max[i] = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
}
#endif

// Pages a prompt's score pass widens together (about 128 keys): each row
// then scores a long run of keys in one pass, where page by page its runs
// were 16 keys long and their setup cost as much as their products. Every
// row of the tile reads the block again, so a smaller block stays nearer:
// Gemma 3's prompt attention (256 dimensions) took 180-195 ms at 256 keys
// against 155-166 at 128 (an AVX2-only EPYC, three interleaved runs).
inline int pages_per_key_block(const PagedKv& kv) { return std::max(1, 128 / kv.page_size); }

// The floats score_rows needs in `rows`.
inline size_t score_rows_floats(const PagedKv& kv) {
  return size_t(pages_per_key_block(kv)) * size_t(kv.page_size) * size_t(kv.head_dim);
}

#if defined(__AVX2__) && defined(__FMA__)
// Scores of rows [r, r + count) of one token for the runs of eight keys
// from lo within hi, in groups of up to four rows that read each key once
// (a last row left alone is not scored). Returns the rows scored and sets
// *k past their runs; see score_key_block.
template <class Mask>
int score_token_rows(const ItemView<Mask>& view, const PageKeys& keys, int block_first, int r, int count, int lo, int hi,
                     const float* queries, const float* offsets, float score_scale, float* weights, float* row_max, int* k) {
  const int dim = view.kv.head_dim, span = view.span.size();
  int done = 0;
  *k = lo;
  while (count - done >= 2) {
    const int n = std::min(4, count - done), first = r + done;
    const float* q[4];
    float* out[4];
    for (int i = 0; i < n; ++i) {
      q[i] = queries + size_t(first + i) * size_t(dim);
      out[i] = weights + size_t(first + i) * size_t(span) + (lo - view.span.first);
    }
    int key = lo;
    const int row = lo - block_first;
    switch (n) {
      case 2: score_runs_of_eight<2>(keys, q, offsets + first, score_scale, row, hi, dim, out, row_max + first, &key); break;
      case 3: score_runs_of_eight<3>(keys, q, offsets + first, score_scale, row, hi, dim, out, row_max + first, &key); break;
      default: score_runs_of_eight<4>(keys, q, offsets + first, score_scale, row, hi, dim, out, row_max + first, &key); break;
    }
    *k = key;
    done += n;
  }
  return done;
}
#endif

// Scores of every row for its keys within [from, to] that lie in one block
// of keys [block_first, block_first + block_rows), key k at row k -
// block_first of `keys`; see score_rows. `row`: head_dim floats of scratch.
template <class Mask, class Score>
void score_key_block(const ItemView<Mask>& view, const PageKeys& keys, int block_first, int block_rows, const float* queries,
                     const float* offsets, const Score& score_mod, float score_scale, int from, int to, float* weights,
                     float* row_max, float* row) {
  const int dim = view.kv.head_dim, span = view.span.size();
  // The rows of one token see the same keys.
  for (int r0 = 0; r0 < view.n_rows;) {
    const int count = std::min(view.n_rows - r0, view.head_count - r0 % view.head_count);
    const int pos = view.batch.positions[view.token(r0)];
    const int lo = std::max({block_first, view.mask.first(pos), from});
    const int hi = std::min({block_first + block_rows - 1, view.mask.last(pos, view.prefix), to});
    if (lo > hi) {
      r0 += count;
      continue;
    }
    int grouped = 0, k_after = lo;
#if defined(__AVX2__) && defined(__FMA__)
    // Keys read in place are widened as they are loaded: the heads of a
    // token (a decode step's rows) share each widening. Widened keys are
    // cheaper to read again than the queries, which the rows' dot8_vector
    // keeps in registers.
    if constexpr (std::is_same_v<Score, NoScoreMod>) {
      if (dim % kLanes == 0 && keys.in_place && view.kv.dtype == DType::kF16) {
        grouped = score_token_rows(view, keys, block_first, r0, count, lo, hi, queries, offsets, score_scale, weights, row_max,
                                   &k_after);
      }
    }
#endif
    for (int r = r0; r < r0 + count; ++r) {
      const int head = view.head(r);
      const float* qv = queries + size_t(r) * size_t(dim);
      float* const row_weights = weights + size_t(r) * size_t(span);
      // The running maximum stays in a register: the compiler cannot tell
      // the scratch buffers apart, so a store per score would be kept.
      float max = row_max[size_t(r)];
      const float offset = offsets[r];
      auto record = [&](int k, float dot) {
        const float s = score_mod((dot + offset) * score_scale, head, pos, k);
        row_weights[k - view.span.first] = s;
        max = std::max(max, s);
      };
      int k = r < r0 + grouped ? k_after : lo;
#if defined(__AVX2__) && defined(__FMA__)
      // Without a score modifier, eight scores are scaled, stored and
      // maximised in one vector each (the same products; a maximum is exact
      // in any order, and a NaN score leaves it as std::max does).
      if constexpr (std::is_same_v<Score, NoScoreMod>) {
        if (dim % kLanes == 0) {
          float* const out = row_weights + (k - view.span.first);
          score_runs_of_eight<1>(keys, &qv, &offset, score_scale, k - block_first, hi, dim, &out, &max, &k);
        }
      }
#endif
      if (dim % kLanes == 0) {
        for (; k + 8 <= hi + 1; k += 8) {
          float dots[8];
          keys.dot8(qv, k - block_first, dim, dots);
          for (int i = 0; i < 8; ++i) record(k + i, dots[i]);
        }
      }
      for (; k <= hi; ++k) record(k, keys.dot(qv, k - block_first, dim, row));
      row_max[size_t(r)] = max;
    }
    r0 += count;
  }
}

// Scores of every row for the keys it sees within [from, to], into
// weights[r][k - span.first], and each row's running maximum in row_max.
// `rows`: score_rows_floats(kv) floats for keys converted from the cache.
template <class Mask, class Score>
void score_rows(const ItemView<Mask>& view, const float* queries, const float* offsets, const Score& score_mod,
                float score_scale, int from, int to, float* weights, float* row_max, float* rows) {
  const PagedKv& kv = view.kv;
  const int dim = kv.head_dim;
  // Many rows (a prompt's tile) share each page: an f16 page is widened
  // once rather than once a row, the rows then reading f32 keys.
  const bool keys_in_place = PageKeys::read_in_place(kv) && (kv.dtype == DType::kF32 || view.n_rows < kMinRowsToWidenKeys);
  auto score = [&](const PageKeys& keys, int first, int n) {
    score_key_block(view, keys, first, n, queries, offsets, score_mod, score_scale, from, to, weights, row_max, rows);
  };
  // Widened pages gather in blocks: the pages visited follow one another
  // in the sequence, so a block's keys are contiguous from its first.
  const int block_pages = pages_per_key_block(kv);
  int pending = 0, block_first = 0, block_rows = 0;
  view.for_each_page(from, to, [&](int page, int page_first, int page_rows) {
    view.prefetch_ahead(kv.k, page_first, to);
    if (keys_in_place) return score(PageKeys::in_cache(kv, kv.k, page, view.item.kv_head), page_first, page_rows);
    if (pending == 0) block_first = page_first;
    load_rows(kv, kv.k, kv.k_scales, page, view.item.kv_head, 0, page_rows, rows + size_t(page_first - block_first) * size_t(dim));
    block_rows = page_first + page_rows - block_first;
    if (++pending == block_pages) {
      score(PageKeys{kv, rows}, block_first, block_rows);
      pending = 0;
    }
  });
  if (pending > 0) score(PageKeys{kv, rows}, block_first, block_rows);
}

}  // namespace
}  // namespace tessera::cpu
