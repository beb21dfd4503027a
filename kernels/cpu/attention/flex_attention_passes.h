#pragma once
// The passes the flex attention kernel is made of, for one work item and a
// range of its keys: the queries as they meet the keys, the scores, the
// softmax in pieces, the values gathered by lane and their weighted sum
// (the score pass itself is in flex_attention_score_pass.h).
// Whole items (flex_attention_impl.h) and items whose keys are split among
// threads (flex_attention_split.h) run the same passes, so both give the
// same bits. Compiled once per instruction set with the kernel body.
#include <algorithm>
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
#include "kernels/cpu/attention/flex_attention.h"
#include "kernels/cpu/attention/flex_attention_values.h"
#include "kernels/cpu/attention/hadamard.h"
#include "kernels/cpu/attention/lane_sum.h"
#if defined(__AVX512F__)
#include "kernels/cpu/attention/attention_key_blocks.h"
#endif
#include "kernels/cpu/elementwise/vector_exp.h"

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

// Bytes of one element of the cache (f32, f16 or int8).
inline size_t kv_element_bytes(const PagedKv& kv) {
  return kv.dtype == DType::kF32 ? sizeof(float) : kv.dtype == DType::kF16 ? sizeof(uint16_t) : sizeof(int8_t);
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

// exp(w[k - first] - row_max) in place for keys [lo, hi], key by key: the
// vector and the scalar exponential give the same bits.
inline void exponentiate(float* w, int first, int lo, int hi, float row_max) {
  int k = lo;
#if defined(__AVX2__) && defined(__FMA__)
  for (; k + 8 <= hi + 1; k += 8) vector_expf8(w + (k - first), row_max, w + (k - first));
#endif
  for (; k <= hi; ++k) w[k - first] = vector_expf(w[k - first] - row_max);
}

// The exponentials of the 16 keys from group_first (a multiple of 16), those
// outside [lo, hi] as zero, summed in reduce_16_lanes' order.
inline float group_sum(const float* w, int first, int group_first, int lo, int hi) {
#if defined(__AVX512F__)
  return reduce_16_lanes(_mm512_maskz_loadu_ps(visible_lanes(group_first, lo, hi), w + (group_first - first)));
#elif defined(__AVX2__) && defined(__FMA__)
  const float* lanes = w + (group_first - first);
  if (group_first >= lo && group_first + kLanes - 1 <= hi) {
    return reduce_16_lanes(_mm256_loadu_ps(lanes), _mm256_loadu_ps(lanes + 8));
  }
  // The group at an end of [lo, hi]: lanes outside it load as zero, and
  // are not read (a masked load does not touch them).
  const __m256i low_keys = _mm256_add_epi32(_mm256_set1_epi32(group_first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i high_keys = _mm256_add_epi32(low_keys, _mm256_set1_epi32(8));
  const __m256i after_lo = _mm256_set1_epi32(lo - 1), before_hi = _mm256_set1_epi32(hi + 1);
  const auto visible = [&](__m256i keys) {
    return _mm256_and_si256(_mm256_cmpgt_epi32(keys, after_lo), _mm256_cmpgt_epi32(before_hi, keys));
  };
  return reduce_16_lanes(_mm256_maskload_ps(lanes, visible(low_keys)), _mm256_maskload_ps(lanes + 8, visible(high_keys)));
#else
  float lanes[kLanes] = {};
  for (int l = 0; l < kLanes; ++l) {
    const int k = group_first + l;
    if (k >= lo && k <= hi) lanes[l] = w[k - first];
  }
  return reduce_16_lanes(lanes);
#endif
}

inline float inverse_sum(double sum) { return sum > 0.0 ? float(1.0 / sum) : 0.0f; }

// Probabilities of keys [lo, hi]: each exponential times `inv`, rounded to
// f16 for an f16 cache.
inline void scale_probabilities(float* w, int first, int lo, int hi, float inv, bool f16) {
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

// Turns the scores w[lo..hi] of one query into probabilities, as llama.cpp's
// softmax does (its exponential; the sum over 16-lane groups aligned to key
// 0, in double), rounded to f16 for an f16 cache. The score of key k is
// w[k - first]; `sink` (exp(sink logit - row_max), or 0) joins the sum last.
// Where w holds no score before w[lo - first], the slack before the buffer
// covers the first group's masked lanes.
inline void normalise_row(float* w, int first, int lo, int hi, float row_max, bool f16, float sink = 0.0f) {
  exponentiate(w, first, lo, hi, row_max);
  double sum = 0.0;
  for (int group_first = lo - lo % kLanes; group_first <= hi; group_first += kLanes) {
    sum += double(group_sum(w, first, group_first, lo, hi));
  }
  sum += double(sink);
  scale_probabilities(w, first, lo, hi, inverse_sum(sum), f16);
}

// The row maximum with the head's sink logit, and the sink's exponential
// (0 without sinks).
inline float max_with_sink(float row_max, const AttentionParams& params, int head, float* sink) {
  *sink = 0.0f;
  if (!params.sinks) return row_max;
  const float logit = params.sinks[head];
  row_max = std::max(row_max, logit);
  *sink = std::exp(logit - row_max);
  return row_max;
}

// Keys [first, last] that any query of an item may see (last < first: none).
struct KeySpan {
  int first, last;
  int size() const { return last - first + 1; }
};

// How far ahead of the page being read ItemView::prefetch_ahead asks for
// keys and values: at 16 keys a page, four pages are several trips to
// memory's worth of a decode step's work (two and four measured alike).
constexpr int kPrefetchPages = 4;
constexpr size_t kCacheLine = 64;

// Asks for the cache line holding p. An instruction the compiler keeps:
// at -O3 GCC 12 removed the loops of __builtin_prefetch calls written here.
inline void prefetch_line(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// An item's query rows, the keys each sees, and its pages: row r is token
// token_begin + r / head_count and query head head0 + r % head_count.
template <class Mask>
struct ItemView {
  const WorkItem& item;
  const PagedKv& kv;
  const AttentionBatch& batch;
  const Mask& mask;
  int head0, head_count, n_rows, prefix, kv_len;
  KeySpan span;

  ItemView(const WorkItem& w, int first_head, int heads, const PagedKv& cache, const AttentionBatch& b, const Mask& m)
      : item(w), kv(cache), batch(b), mask(m), head0(first_head), head_count(heads),
        n_rows((w.token_end - w.token_begin) * heads), prefix(b.prefix_len ? b.prefix_len[w.seq] : 0), kv_len(b.kv_len[w.seq]) {
    span = {std::numeric_limits<int>::max(), -1};
    for (int t = item.token_begin; t < item.token_end; ++t) {
      span.first = std::min(span.first, mask.first(batch.positions[t]));
      span.last = std::max(span.last, std::min(kv_len - 1, mask.last(batch.positions[t], prefix)));
    }
    if (span.last < span.first) span.last = span.first - 1;
  }
  int token(int r) const { return item.token_begin + r / head_count; }
  int head(int r) const { return head0 + r % head_count; }
  // The keys query row r sees: [*lo, *hi], within the span.
  void row_keys(int r, int* lo, int* hi) const {
    const int pos = batch.positions[token(r)];
    *lo = std::max(span.first, mask.first(pos));
    *hi = std::min(kv_len - 1, mask.last(pos, prefix));
  }
  // Asks the cache for the rows of this item's KV head in the page that
  // holds key page_first + kPrefetchPages * page_size, when that page holds
  // keys up to `to`, from `pool` (kv.k or kv.v). A head's rows lie
  // n_kv_heads * head_dim elements apart and the processor's prefetchers
  // stop at every 4 KiB, so a decode step over a long context otherwise
  // waits on memory every few keys (most of its time on an AVX2-only EPYC
  // at 512 cached tokens).
  void prefetch_ahead(const void* pool, int page_first, int to) const {
    const int first = page_first + kPrefetchPages * kv.page_size;
    const int p = first / kv.page_size;
    if (first > std::min(to, kv_len - 1) || p >= batch.page_indptr[item.seq + 1] - batch.page_indptr[item.seq]) return;
    const size_t element = kv_element_bytes(kv);
    const int page = batch.page_indices[batch.page_indptr[item.seq] + p];
    const char* row = static_cast<const char*>(pool) + page_offset(kv, page, item.kv_head) * element;
    const size_t row_bytes = size_t(kv.head_dim) * element, stride = size_t(kv.n_kv_heads) * row_bytes;
    const int rows = std::min(kv.page_size, kv_len - first);
    for (int r = 0; r < rows; ++r, row += stride) {
      for (size_t b = 0; b < row_bytes; b += kCacheLine) prefetch_line(row + b);
    }
  }
  // body(page in the pool, its first key, its rows) for each page with a key in [from, to].
  template <class Body>
  void for_each_page(int from, int to, Body&& body) const {
    const int n_pages = batch.page_indptr[item.seq + 1] - batch.page_indptr[item.seq];
    for (int p = std::max(from, 0) / kv.page_size; p < n_pages; ++p) {
      const int page_first = p * kv.page_size;
      const int page_rows = std::min(kv.page_size, kv_len - page_first);
      if (page_rows <= 0 || page_first > to) break;
      if (page_first + page_rows - 1 < from) continue;
      body(batch.page_indices[batch.page_indptr[item.seq] + p], page_first, page_rows);
    }
  }
};

// The item's query rows as they meet the keys, queries[r][dim]: scaled
// where the model scales queries, rounded to f16 for an f16 cache. An int8
// cache's keys are centred and rotated (see ops::PagedKv): the queries are
// rotated to meet them, and each row's q·k_center, offsets[r], is added back
// to its scores.
template <class Mask>
void prepare_queries(const ItemView<Mask>& view, const float* q, int n_heads, const AttentionParams& params, float* queries,
                     float* offsets) {
  const PagedKv& kv = view.kv;
  const int dim = kv.head_dim;
  const bool f16 = kv.dtype == DType::kF16, int8 = kv.dtype == DType::kI8;
  const float query_scale = params.scale_queries ? params.scale : 1.0f;
  for (int r = 0; r < view.n_rows; ++r) {
    const float* src = q + (size_t(view.token(r)) * size_t(n_heads) + size_t(view.head(r))) * size_t(dim);
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
    offsets[r] = int8 && kv.k_center ? ordered_dot(row, kv.k_center + size_t(view.item.kv_head) * size_t(dim), dim) : 0.0f;
    if (int8 && hadamard_applies(dim)) walsh_hadamard(row, dim);
  }
}

// The values of keys [from, to] into their lanes (LaneValues), converted to f32.
template <class Mask>
void gather_values(const ItemView<Mask>& view, const LaneValues& values, int from, int to) {
  const PagedKv& kv = view.kv;
  view.for_each_page(from, to, [&](int page, int page_first, int page_rows) {
    view.prefetch_ahead(kv.v, page_first, to);
    const int first = std::max(page_first, from), last = std::min(page_first + page_rows - 1, to);
    // Keys of one run of 16 (aligned to key 0) sit a lane apart.
    for (int k = first; k <= last;) {
      const int run_end = std::min(last + 1, k + kLanes - k % kLanes);
      load_rows(kv, kv.v, kv.v_scales, page, view.item.kv_head, k - page_first, run_end - page_first, values.row(k),
                values.lane_stride());
      k = run_end;
    }
  });
}

// Elements [d_begin, d_end) of the outputs of the item's heads
// [h_begin, h_end) (counted from head0), out[token][head][dim]: each token's
// heads see the same keys, and up to kValueRows of them go through the values
// together. weights[r][k - span.first] holds the probabilities.
// acc: kValueRows * 16 * kValueChunk floats.
template <class Mask>
void weigh_values(const ItemView<Mask>& view, const float* weights, const LaneValues& values, int h_begin, int h_end,
                  int d_begin, int d_end, int n_heads, float* acc, float* out) {
  const int dim = view.kv.head_dim, span = view.span.size();
  for (int t = view.item.token_begin; t < view.item.token_end; ++t) {
    const int row0 = (t - view.item.token_begin) * view.head_count;
    int lo, hi;
    view.row_keys(row0, &lo, &hi);
    for (int h0 = h_begin; h0 < h_end; h0 += kValueRows) {
      const int n = std::min(kValueRows, h_end - h0);
      const float* w[kValueRows];
      float* o[kValueRows];
      for (int i = 0; i < n; ++i) {
        w[i] = weights + size_t(row0 + h0 + i) * size_t(span);
        o[i] = out + (size_t(t) * size_t(n_heads) + size_t(view.head0 + h0 + i)) * size_t(dim);
      }
      const int first = view.span.first;
      switch (n) {
        case 1: weighted_values<1>(w, values, first, lo, hi, d_begin, d_end, acc, o); break;
        case 2: weighted_values<2>(w, values, first, lo, hi, d_begin, d_end, acc, o); break;
        case 3: weighted_values<3>(w, values, first, lo, hi, d_begin, d_end, acc, o); break;
        default: weighted_values<4>(w, values, first, lo, hi, d_begin, d_end, acc, o); break;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
