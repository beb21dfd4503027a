#pragma once
// The flex attention kernel body, compiled once per instruction set (see
// flex_attention_generic.cc and flex_attention_avx2.cc): the same source and
// the same order of operations, so every build gives the same bits.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "engine/tensor/half.h"
#include "kernels/cpu/attention/flex_attention_values.h"
#include "kernels/cpu/attention/flex_attention_variants.h"
#include "kernels/cpu/attention/hadamard.h"
#include "kernels/cpu/attention/lane_sum.h"
#if defined(__AVX512F__)
#include "kernels/cpu/attention/attention_key_blocks.h"
#endif
#include "kernels/cpu/elementwise/vector_exp.h"
#include "kernels/query_groups.h"

// Internal linkage: each including file gets its own copy, built with its own
// instruction-set flags.
namespace tessera::cpu {
namespace {



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

using WorkItem = AttentionWorkItem;

// `n` floats of `buffer`, growing it when needed; their contents are left
// as they are, for buffers written before they are read.
float* scratch_floats(std::vector<float>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Where row 0 of one page and KV head starts in the pool, in elements; rows
// are n_kv_heads * head_dim elements apart.
size_t page_offset(const PagedKv& kv, int page, int kv_head) {
  return size_t(page) * size_t(kv.page_size) * size_t(kv.n_kv_heads) * size_t(kv.head_dim) + size_t(kv_head) * size_t(kv.head_dim);
}

// Rows [row_begin, row_end) of one page and KV head as f32, row r at
// dst + (r - row_begin) * dst_stride (head_dim floats by default).
// `scales`: the page pool's int8 scales (kI8 only).
void load_rows(const PagedKv& kv, const void* pool, const float* scales, int page, int kv_head, int row_begin, int row_end,
               float* dst, size_t dst_stride = 0) {
  if (dst_stride == 0) dst_stride = size_t(kv.head_dim);
  const size_t elems_per_row = size_t(kv.n_kv_heads) * size_t(kv.head_dim);
  const size_t first_slot = size_t(page) * size_t(kv.page_size);
  const size_t first = page_offset(kv, page, kv_head);
  for (int r = row_begin; r < row_end; ++r) {
    const size_t offset = first + size_t(r) * elems_per_row;
    float* out = dst + size_t(r - row_begin) * dst_stride;
    int d = 0;
    if (kv.dtype == DType::kF32) {
      std::memcpy(out, static_cast<const float*>(pool) + offset, size_t(kv.head_dim) * sizeof(float));
    } else if (kv.dtype == DType::kI8) {
      const int8_t* src = static_cast<const int8_t*>(pool) + offset;
      const float scale = scales[(first_slot + size_t(r)) * size_t(kv.n_kv_heads) + size_t(kv_head)];
#if defined(__AVX2__)
      for (; d + 8 <= kv.head_dim; d += 8) {
        const __m256i wide = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + d)));
        _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_cvtepi32_ps(wide), _mm256_set1_ps(scale)));
      }
#endif
      for (; d < kv.head_dim; ++d) out[d] = float(src[d]) * scale;
    } else {
      const uint16_t* src = static_cast<const uint16_t*>(pool) + offset;
#if defined(__F16C__)
      for (; d + 8 <= kv.head_dim; d += 8) {
        _mm256_storeu_ps(out + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + d))));
      }
#endif
      for (; d < kv.head_dim; ++d) out[d] = f16_to_f32(src[d]);
    }
  }
}

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
    const size_t element_bytes = kv.dtype == DType::kF32 ? sizeof(float) : sizeof(uint16_t);
    return {kv, nullptr, static_cast<const uint8_t*>(pool) + page_offset(kv, page, kv_head) * element_bytes,
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

  // The dot of q with row r; `row` holds dim floats for a row in f16.
  float dot(const float* q, int r, int dim, float* row) const {
    if (!in_place) return ordered_dot(q, buffer + size_t(r) * size_t(dim), dim);
    if (kv.dtype == DType::kF32) return ordered_dot(q, static_cast<const float*>(in_place) + size_t(r) * stride, dim);
    const uint16_t* src = static_cast<const uint16_t*>(in_place) + size_t(r) * stride;
    for (int d = 0; d < dim; ++d) row[d] = f16_to_f32(src[d]);
    return ordered_dot(q, row, dim);
  }
};

// Turns the scores w[lo..hi] of one query into probabilities, as llama.cpp's
// softmax does (its exponential; the sum over 16-lane groups aligned to key
// 0, in double), rounded to f16 for an f16 cache. The score of key k is
// w[k - first]; `sink` (exp(sink logit - row_max), or 0) joins the sum last.
inline void normalise_row(float* w, int first, int lo, int hi, float row_max, bool f16, float sink = 0.0f) {
  int first_scalar = lo;
#if defined(__AVX2__) && defined(__FMA__)
  for (; first_scalar + 8 <= hi + 1; first_scalar += 8) {
    vector_expf8(w + (first_scalar - first), row_max, w + (first_scalar - first));
  }
#endif
  for (int k = first_scalar; k <= hi; ++k) w[k - first] = vector_expf(w[k - first] - row_max);
  // Sixteen keys at a time, aligned to key 0, each group summed in lane order.
  double sum = 0.0;
  int group_first = lo - lo % kLanes;
#if defined(__AVX512F__)
  for (; group_first <= hi; group_first += kLanes) {
    const __mmask16 keys = visible_lanes(group_first, lo, hi);
    sum += double(reduce_16_lanes(_mm512_maskz_loadu_ps(keys, w + (group_first - first))));
  }
#endif
  for (; group_first <= hi; group_first += kLanes) {
    float lanes[kLanes] = {};
    for (int l = 0; l < kLanes; ++l) {
      const int k = group_first + l;
      if (k >= lo && k <= hi) lanes[l] = w[k - first];
    }
    sum += double(reduce_16_lanes(lanes));
  }
  sum += double(sink);
  const float inv = sum > 0.0 ? float(1.0 / sum) : 0.0f;
  int k = lo;
#if defined(__AVX2__) && defined(__F16C__)
  for (; k + 8 <= hi + 1; k += 8) {
    __m256 prob = _mm256_mul_ps(_mm256_loadu_ps(w + (k - first)), _mm256_set1_ps(inv));
    // The hardware conversion rounds to nearest even, as f32_to_f16 does.
    if (f16) prob = _mm256_cvtph_ps(_mm256_cvtps_ph(prob, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm256_storeu_ps(w + (k - first), prob);
  }
#endif
  for (; k <= hi; ++k) {
    const float prob = w[k - first] * inv;
    w[k - first] = f16 ? f16_to_f32(f32_to_f16(prob)) : prob;
  }
}

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
  const int dim = kv.head_dim;
  const bool f16 = kv.dtype == DType::kF16;
  const int n_tokens = item.token_end - item.token_begin;
  const int n_rows = n_tokens * head_count;
  const int prefix = batch.prefix_len ? batch.prefix_len[item.seq] : 0;
  const int kv_len = batch.kv_len[item.seq];
  // Keys any query of the tile may see: [span_first, span_last].
  int span_first = std::numeric_limits<int>::max(), span_last = -1;
  for (int t = item.token_begin; t < item.token_end; ++t) {
    span_first = std::min(span_first, mask.first(batch.positions[t]));
    span_last = std::max(span_last, std::min(kv_len - 1, mask.last(batch.positions[t], prefix)));
  }
  if (span_last < span_first) span_last = span_first - 1;
  const int span = span_last - span_first + 1;
  float* const queries = scratch_floats(scratch.queries, size_t(n_rows) * size_t(dim));
  const float query_scale = params.scale_queries ? params.scale : 1.0f;
  const float score_scale = params.scale_queries ? 1.0f : params.scale;
  // An int8 cache's keys are centred and rotated (see ops::PagedKv): the
  // queries are rotated to meet them, and each row's q·k_center is added
  // back to its scores.
  const bool int8 = kv.dtype == DType::kI8;
  float* const offsets = scratch_floats(scratch.offsets, size_t(n_rows));
  for (int r = 0; r < n_rows; ++r) {
    const int t = item.token_begin + r / head_count, head = head0 + r % head_count;
    const float* src = q + (size_t(t) * size_t(n_heads) + size_t(head)) * size_t(dim);
    float* row = queries + size_t(r) * size_t(dim);
    int d = 0;
#if defined(__AVX2__) && defined(__F16C__)
    // The hardware conversion rounds to nearest even, as f32_to_f16 does.
    for (; f16 && d + 8 <= dim; d += 8) {
      const __m256 value = _mm256_mul_ps(_mm256_loadu_ps(src + d), _mm256_set1_ps(query_scale));
      _mm256_storeu_ps(row + d, _mm256_cvtph_ps(_mm256_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    }
#endif
    for (; d < dim; ++d) {
      const float value = src[d] * query_scale;
      row[d] = f16 ? f16_to_f32(f32_to_f16(value)) : value;
    }
    offsets[r] = int8 && kv.k_center ? ordered_dot(row, kv.k_center + size_t(item.kv_head) * size_t(dim), dim) : 0.0f;
    if (int8 && hadamard_applies(dim)) walsh_hadamard(row, dim);
  }
  // weights[r][k - span_first]: the score, then the probability.
  // Only the scores of visible keys are written, and only they are read.
  // One block of slack before the first row: a block of 16 keys may start
  // before the span, its lanes there masked off.
  float* const weights = scratch_floats(scratch.weights, size_t(n_rows) * size_t(std::max(span, 0)) + kLanes) + kLanes;
  float* const row_max = scratch_floats(scratch.row_max, size_t(n_rows));
  std::fill_n(row_max, n_rows, -std::numeric_limits<float>::infinity());
  float* const rows = scratch_floats(scratch.rows, size_t(kv.page_size) * size_t(dim));
  const int n_pages = batch.page_indptr[item.seq + 1] - batch.page_indptr[item.seq];
  auto visible_keys = [&](int t, int page_first, int page_rows, int* lo, int* hi) {
    const int pos = batch.positions[t];
    *lo = std::max(page_first, mask.first(pos));
    *hi = std::min(page_first + page_rows - 1, mask.last(pos, prefix));
    return *lo <= *hi;
  };
  // body(page in the pool, its first key, its rows) for each page with a key in the span.
  auto for_each_page = [&](auto&& body) {
    for (int p = 0; p < n_pages; ++p) {
      const int page_first = p * kv.page_size;
      const int page_rows = std::min(kv.page_size, kv_len - page_first);
      if (page_rows <= 0) break;
      if (page_first + page_rows - 1 < span_first || page_first > span_last) continue;  // wholly masked
      body(batch.page_indices[batch.page_indptr[item.seq] + p], page_first, page_rows);
    }
  };
  const bool keys_in_place = PageKeys::read_in_place(kv);
#if defined(__AVX512F__)
  // Transposing the keys pays off once enough rows share them; a decode
  // step's few rows read them where they lie.
  const bool in_blocks = dim % kLanes == 0 && n_rows >= kMinRowsForKeyBlocks;
  if (in_blocks) {
    score_in_blocks(item, head0, head_count, queries, offsets, kv, batch, mask, score_mod, score_scale, prefix, span_first,
                    span_last, weights, row_max, scratch, for_each_page);
  }
#else
  const bool in_blocks = false;
#endif
  if (!in_blocks) for_each_page([&](int page, int page_first, int page_rows) {
    const PageKeys keys = keys_in_place ? PageKeys::in_cache(kv, kv.k, page, item.kv_head) : PageKeys{kv, rows};
    if (!keys_in_place) load_rows(kv, kv.k, kv.k_scales, page, item.kv_head, 0, page_rows, rows);
    for (int r = 0; r < n_rows; ++r) {
      const int t = item.token_begin + r / head_count, head = head0 + r % head_count;
      int lo, hi;
      if (!visible_keys(t, page_first, page_rows, &lo, &hi)) continue;
      const float* qv = queries + size_t(r) * size_t(dim);
      float* const row_weights = weights + size_t(r) * size_t(span);
      // The running maximum stays in a register: the compiler cannot tell
      // the scratch buffers apart, so a store per score would be kept.
      float max = row_max[size_t(r)];
      const float offset = offsets[r];
      auto record = [&](int k, float dot) {
        const float s = score_mod((dot + offset) * score_scale, head, batch.positions[t], k);
        row_weights[k - span_first] = s;
        max = std::max(max, s);
      };
      int k = lo;
      if (dim % kLanes == 0) {
        for (; k + 8 <= hi + 1; k += 8) {
          float dots[8];
          keys.dot8(qv, k - page_first, dim, dots);
          for (int i = 0; i < 8; ++i) record(k + i, dots[i]);
        }
      }
      for (; k <= hi; ++k) record(k, keys.dot(qv, k - page_first, dim, rows));
      row_max[size_t(r)] = max;
    }
  });
  for (int r = 0; r < n_rows; ++r) {
    const int t = item.token_begin + r / head_count;
    const int lo = std::max(span_first, mask.first(batch.positions[t]));
    const int hi = std::min(kv_len - 1, mask.last(batch.positions[t], prefix));
    float max = row_max[size_t(r)], sink = 0.0f;
    if (params.sinks) {
      const float logit = params.sinks[head0 + r % head_count];
      max = std::max(max, logit);
      sink = std::exp(logit - max);
    }
    normalise_row(weights + size_t(r) * size_t(span), span_first, lo, hi, max, f16, sink);
  }
  const LaneValues values(scratch_floats(scratch.values, LaneValues::floats(span_first, span_last, dim)), span_first, span_last, dim);
  for_each_page([&](int page, int page_first, int page_rows) {
    const int from = std::max(page_first, span_first), to = std::min(page_first + page_rows - 1, span_last);
    // Keys of one run of 16 (aligned to key 0) sit a lane apart.
    for (int k = from; k <= to;) {
      const int run_end = std::min(to + 1, k + kLanes - k % kLanes);
      load_rows(kv, kv.v, kv.v_scales, page, item.kv_head, k - page_first, run_end - page_first, values.row(k), values.lane_stride());
      k = run_end;
    }
  });
  // The heads of one token see the same keys: up to kValueRows of them go
  // through the values together.
  float* const acc = scratch_floats(scratch.acc, size_t(kValueRows) * kLanes * kValueChunk);
  for (int t = item.token_begin; t < item.token_end; ++t) {
    const int lo = std::max(span_first, mask.first(batch.positions[t]));
    const int hi = std::min(kv_len - 1, mask.last(batch.positions[t], prefix));
    for (int h0 = 0; h0 < head_count; h0 += kValueRows) {
      const int n = std::min(kValueRows, head_count - h0);
      const float* w[kValueRows];
      float* o[kValueRows];
      for (int i = 0; i < n; ++i) {
        const int r = (t - item.token_begin) * head_count + h0 + i, head = head0 + h0 + i;
        w[i] = weights + size_t(r) * size_t(span);
        o[i] = out + (size_t(t) * size_t(n_heads) + size_t(head)) * size_t(dim);
      }
      switch (n) {
        case 1: weighted_values<1>(w, values, span_first, lo, hi, acc, o); break;
        case 2: weighted_values<2>(w, values, span_first, lo, hi, acc, o); break;
        case 3: weighted_values<3>(w, values, span_first, lo, hi, acc, o); break;
        default: weighted_values<4>(w, values, span_first, lo, hi, acc, o); break;
      }
    }
  }
}

template <class Mask, class Score>
void run_all(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
             const AttentionParams& params, const Mask& mask, const Score& score, float* out, ThreadPool& pool,
             AttentionScratch* scratch) {
  // Items differ in cost (a causal tile late in a prompt sees more keys), so
  // threads claim them one at a time, costliest (last) first. Each item
  // writes its own outputs: the order changes no result. With fewer items
  // than threads (decode with few KV heads), each item's query heads are
  // split into parts the threads share; every part reads the keys itself.
  std::string why;
  const ops::QueryGroups groups = ops::query_groups(n_heads, kv.n_kv_heads, params, &why);
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
                    ThreadPool& pool, AttentionScratch* scratch) {
  switch (params.score) {
    case ScoreMod::kNone: return run_all(items, q, n_heads, kv, batch, params, mask, NoScoreMod{}, out, pool, scratch);
    case ScoreMod::kSoftcap: return run_all(items, q, n_heads, kv, batch, params, mask, SoftcapMod{params.softcap}, out, pool, scratch);
    case ScoreMod::kAlibi: return run_all(items, q, n_heads, kv, batch, params, mask, AlibiMod{params.alibi_slopes}, out, pool, scratch);
  }
}

// Runs every work item; the public entry point has checked the arguments.
inline void run_items(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                      const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                      AttentionScratch* scratch) {
  switch (params.mask) {
    case MaskMod::kCausal: return dispatch_score(items, q, n_heads, kv, batch, params, CausalMask{}, out, pool, scratch);
    case MaskMod::kSlidingWindow:
      return dispatch_score(items, q, n_heads, kv, batch, params, SlidingWindowMask{params.window}, out, pool, scratch);
    case MaskMod::kPrefixLm: return dispatch_score(items, q, n_heads, kv, batch, params, PrefixLmMask{}, out, pool, scratch);
  }
}

}  // namespace
}  // namespace tessera::cpu
