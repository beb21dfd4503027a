// Integer-linear kernels for AVX-512 with VNNI: int16 products accumulate
// with vpdpwssd (32 a step), int8 ones with vpdpbusd (64 a step). A tile of
// R rows and T tokens keeps R x T accumulators: each widened weight vector
// serves T tokens and each activation load R rows. Every (row, token)
// accumulator sees the same operations in the same order whatever the tile,
// so a token's result does not depend on the batch it came in.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/linear/int_linear.h"
#include "kernels/cpu/linear/vnni_accumulate.h"
#include "kernels/cpu/linear/weight_prefetch.h"

namespace tessera::cpu {
namespace {

// Fixed-order horizontal sums (halves added pairwise down to one lane).
float reduce_add(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

int32_t reduce_add(__m512i v) {
  const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

__m512i load_bytes_as_words(const uint8_t* p, bool sign) {
  const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return sign ? _mm512_cvtepi8_epi16(bytes) : _mm512_cvtepu8_epi16(bytes);
}

// The tile's rows lie one after another, so its reads advance through
// [w, w + R * w_stride) about R bytes for each byte along a row: `done` bytes
// along the rows, the lines ahead of the tile's `step` new bytes are asked for.
template <int R>
void prefetch_tile_ahead(const IntRowTask& t, int64_t done, int64_t step) {
  for (int64_t b = 0; b < R * step; b += 64) prefetch_weights_ahead(t.w + done * R + b);
}

// Span ends: each accumulator's int32 sum joins its f32 sum with the row's scale.
template <int R, int T>
void close_span(__m512i (&acci)[R][T], __m512 (&accf)[R][T], const IntRowLayout& l, const IntRowTask& t, int64_t s) {
  for (int r = 0; r < R; ++r) {
    const __m512 scale = _mm512_set1_ps(t.scales[r * l.n_spans + s]);
    for (int k = 0; k < T; ++k) accf[r][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acci[r][k]), scale, accf[r][k]);
  }
}

// 4 bits: the products used the unsigned nibbles; zero * (the span's
// activation sum) comes off in lane 0, exactly, once per span.
template <int R, int T>
void take_zero_points(__m512i (&acci)[R][T], const IntRowLayout& l, const IntRowTask& t, int64_t s) {
  for (int r = 0; r < R; ++r) {
    for (int k = 0; k < T; ++k) {
      const int32_t offset = int32_t(t.zeros[r * l.n_spans + s]) * t.x_span_sums[k * l.n_spans + s];
      acci[r][k] = _mm512_sub_epi32(acci[r][k], _mm512_maskz_set1_epi32(1, offset));
    }
  }
}

template <int R, int T>
void store(__m512 (&accf)[R][T], const IntRowTask& t) {
  for (int r = 0; r < R; ++r) {
    for (int k = 0; k < T; ++k) t.y[k * t.y_stride + r] = reduce_add(accf[r][k]) * t.x_scales[k];
  }
}

template <int R, int T>
void a16_w8_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const int16_t*>(t.x);
  __m512 accf[R][T];
  for (auto& row : accf) for (auto& a : row) a = _mm512_setzero_ps();
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
    __m512i acci[R][T];
    for (auto& row : acci) for (auto& a : row) a = _mm512_setzero_si512();
    for (int64_t c = begin; c < end; c += 32) {
      if (c % 64 == 0) prefetch_tile_ahead<R>(t, c, 64);
      __m512i w[R];
      for (int r = 0; r < R; ++r) w[r] = load_bytes_as_words(t.w + size_t(r) * t.w_stride + c, true);
      for (int k = 0; k < T; ++k) {
        const __m512i xv = _mm512_loadu_si512(x + k * t.x_stride + c);
        for (int r = 0; r < R; ++r) dpwssd_into<true>(acci[r][k], w[r], xv);
      }
    }
    close_span(acci, accf, l, t, s);
  }
  store(accf, t);
}

// 4-bit rows: a 32-byte load widens to 32 words holding two columns each,
// the low nibble (columns 0..31 of the chunk) and the high one (32..63).
template <int R, int T>
void a16_w4_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const int16_t*>(t.x);
  const __m512i low_mask = _mm512_set1_epi16(0x0F);
  __m512 accf[R][T];
  for (auto& row : accf) for (auto& a : row) a = _mm512_setzero_ps();
  const bool whole_chunks = l.span % 64 == 0;
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
    __m512i acci[R][T];
    for (auto& row : acci) for (auto& a : row) a = _mm512_setzero_si512();
    if (whole_chunks) {
      for (int64_t c = begin; c < end; c += 64) {
        prefetch_tile_ahead<R>(t, c / 2, 32);
        __m512i lo[R], hi[R];
        for (int r = 0; r < R; ++r) {
          const __m512i raw = load_bytes_as_words(t.w + size_t(r) * t.w_stride + c / 2, false);
          lo[r] = _mm512_and_si512(raw, low_mask);
          hi[r] = _mm512_srli_epi16(raw, 4);
        }
        for (int k = 0; k < T; ++k) {
          const __m512i xlo = _mm512_loadu_si512(x + k * t.x_stride + c);
          const __m512i xhi = _mm512_loadu_si512(x + k * t.x_stride + c + 32);
          for (int r = 0; r < R; ++r) {
            dpwssd_into<true>(acci[r][k], lo[r], xlo);
            dpwssd_into<true>(acci[r][k], hi[r], xhi);
          }
        }
      }
    } else {
      for (int64_t c = begin; c < end; c += 32) {
        if (c % 64 == 0) prefetch_tile_ahead<R>(t, c / 2, 32);
        __m512i w[R];
        for (int r = 0; r < R; ++r) {
          const __m512i raw = load_bytes_as_words(t.w + size_t(r) * t.w_stride + (c / 64) * 32, false);
          w[r] = (c % 64) == 0 ? _mm512_and_si512(raw, low_mask) : _mm512_srli_epi16(raw, 4);
        }
        for (int k = 0; k < T; ++k) {
          const __m512i xv = _mm512_loadu_si512(x + k * t.x_stride + c);
          for (int r = 0; r < R; ++r) dpwssd_into<true>(acci[r][k], w[r], xv);
        }
      }
    }
    take_zero_points(acci, l, t, s);
    close_span(acci, accf, l, t, s);
  }
  store(accf, t);
}

// Activations arrive as uint8 (x + 128): vpdpbusd multiplies unsigned by
// signed bytes, and the offset is taken back with the row's weight sum.
template <int R, int T>
void a8_w8_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const uint8_t*>(t.x);
  __m512i acc[R][T];
  for (auto& row : acc) for (auto& a : row) a = _mm512_setzero_si512();
  for (int64_t c = 0; c < l.padded_cols; c += 64) {
    prefetch_tile_ahead<R>(t, c, 64);
    __m512i w[R];
    for (int r = 0; r < R; ++r) w[r] = _mm512_loadu_si512(t.w + size_t(r) * t.w_stride + c);
    for (int k = 0; k < T; ++k) {
      const __m512i xv = _mm512_loadu_si512(x + k * t.x_stride + c);
      for (int r = 0; r < R; ++r) dpbusd_into<true>(acc[r][k], xv, w[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int k = 0; k < T; ++k) {
      const int32_t sum = reduce_add(acc[r][k]) - 128 * t.row_sums[r];
      t.y[k * t.y_stride + r] = float(sum) * (t.x_scales[k] * t.scales[r * l.n_spans]);
    }
  }
}

template <int R, int T>
struct A16W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a16_w8_tile<R, T>(l, t); }
};
template <int R, int T>
struct A16W4 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a16_w4_tile<R, T>(l, t); }
};
template <int R, int T>
struct A8W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a8_w8_tile<R, T>(l, t); }
};

template <template <int, int> class Tile, int R>
void dispatch_tokens(const IntRowLayout& l, const IntRowTask& t) {
  switch (t.n_tokens) {
    case 1: return Tile<R, 1>::run(l, t);
    case 2: return Tile<R, 2>::run(l, t);
    case 3: return Tile<R, 3>::run(l, t);
    default: return Tile<R, 4>::run(l, t);
  }
}

template <template <int, int> class Tile>
void dispatch(const IntRowLayout& l, const IntRowTask& t) {
  switch (t.n_rows) {
    case 1: return dispatch_tokens<Tile, 1>(l, t);
    case 2: return dispatch_tokens<Tile, 2>(l, t);
    case 3: return dispatch_tokens<Tile, 3>(l, t);
    default: return dispatch_tokens<Tile, 4>(l, t);
  }
}

}  // namespace

// The portable rounding, 16 lanes at a time: vcvtps2dq rounds to nearest
// even like lrintf, and the maximum ignores NaNs as std::max does.
void quantize_int_row_avx512(const IntRowQuantizeArgs& a) {
  __m512 vmax = _mm512_setzero_ps();
  for (int64_t c = 0; c < a.cols; c += 16) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(a.x + c)), vmax);
  const float amax = _mm512_reduce_max_ps(vmax);
  if (a.q16) {
    const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 32767.0f / amax : 0.0f);
    for (int64_t c = 0; c < a.cols; c += 16) {
      const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(a.x + c), inv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.q16 + c), _mm512_cvtepi32_epi16(q));
    }
    *a.scale16 = amax / 32767.0f;
  }
  if (a.q8) {
    const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    const __m512i offset = _mm512_set1_epi32(a.offset8 ? 128 : 0);
    for (int64_t c = 0; c < a.cols; c += 16) {
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(a.x + c), inv)), offset);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(a.q8 + c), _mm512_cvtepi32_epi8(q));
    }
    *a.scale8 = amax / 127.0f;
  }
}

IntLinearKernels avx512_int_kernels() {
  IntLinearKernels k{dispatch<A16W8>, dispatch<A16W4>, dispatch<A8W8>};
  k.offset_int8_activations = true;
  k.quantize_row = quantize_int_row_avx512;
  k.reads_span_sums = true;
  return k;
}

}  // namespace tessera::cpu
