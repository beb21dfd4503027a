// Integer-linear kernels for AVX-512 with VNNI: int16 products accumulate
// with vpdpwssd (32 a step), int8 ones with vpdpbusd (64 a step). One
// template per kernel serves every tile of tokens, so a token's result does
// not depend on how many tokens share its tile.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/int_linear.h"

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

template <int T>
void a16_w8_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const int16_t*>(t.x);
  __m512 accf[T];
  for (int k = 0; k < T; ++k) accf[k] = _mm512_setzero_ps();
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
    __m512i acci[T];
    for (int k = 0; k < T; ++k) acci[k] = _mm512_setzero_si512();
    for (int64_t c = begin; c < end; c += 32) {
      const __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w + c)));
      for (int k = 0; k < T; ++k) acci[k] = _mm512_dpwssd_epi32(acci[k], w, _mm512_loadu_si512(x + k * t.x_stride + c));
    }
    const __m512 scale = _mm512_set1_ps(t.scales[s]);
    for (int k = 0; k < T; ++k) accf[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acci[k]), scale, accf[k]);
  }
  for (int k = 0; k < T; ++k) t.y[k * t.y_stride] = reduce_add(accf[k]) * t.x_scales[k];
}

// 4-bit rows: a 32-byte load widens to 32 words holding two columns each,
// the low nibble (columns 0..31 of the chunk) and the high one (32..63).
template <int T>
void a16_w4_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const int16_t*>(t.x);
  const __m512i low_mask = _mm512_set1_epi16(0x0F);
  __m512 accf[T];
  for (int k = 0; k < T; ++k) accf[k] = _mm512_setzero_ps();
  const bool whole_chunks = l.span % 64 == 0;
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
    const __m512i zero = _mm512_set1_epi16(t.zeros[s]);
    __m512i acci[T];
    for (int k = 0; k < T; ++k) acci[k] = _mm512_setzero_si512();
    if (whole_chunks) {
      for (int64_t c = begin; c < end; c += 64) {
        const __m512i raw = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w + c / 2)));
        const __m512i lo = _mm512_sub_epi16(_mm512_and_si512(raw, low_mask), zero);
        const __m512i hi = _mm512_sub_epi16(_mm512_srli_epi16(raw, 4), zero);
        for (int k = 0; k < T; ++k) {
          const int16_t* xk = x + k * t.x_stride + c;
          acci[k] = _mm512_dpwssd_epi32(acci[k], lo, _mm512_loadu_si512(xk));
          acci[k] = _mm512_dpwssd_epi32(acci[k], hi, _mm512_loadu_si512(xk + 32));
        }
      }
    } else {
      for (int64_t c = begin; c < end; c += 32) {
        const __m512i raw =
            _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w + (c / 64) * 32)));
        const __m512i u = (c % 64) == 0 ? _mm512_and_si512(raw, low_mask) : _mm512_srli_epi16(raw, 4);
        const __m512i w = _mm512_sub_epi16(u, zero);
        for (int k = 0; k < T; ++k) acci[k] = _mm512_dpwssd_epi32(acci[k], w, _mm512_loadu_si512(x + k * t.x_stride + c));
      }
    }
    const __m512 scale = _mm512_set1_ps(t.scales[s]);
    for (int k = 0; k < T; ++k) accf[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acci[k]), scale, accf[k]);
  }
  for (int k = 0; k < T; ++k) t.y[k * t.y_stride] = reduce_add(accf[k]) * t.x_scales[k];
}

// Activations arrive as uint8 (x + 128): vpdpbusd multiplies unsigned by
// signed bytes, and the offset is taken back with the row's weight sum.
template <int T>
void a8_w8_tile(const IntRowLayout& l, const IntRowTask& t) {
  const auto* x = static_cast<const uint8_t*>(t.x);
  __m512i acc[T];
  for (int k = 0; k < T; ++k) acc[k] = _mm512_setzero_si512();
  for (int64_t c = 0; c < l.padded_cols; c += 64) {
    const __m512i w = _mm512_loadu_si512(t.w + c);
    for (int k = 0; k < T; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], _mm512_loadu_si512(x + k * t.x_stride + c), w);
  }
  for (int k = 0; k < T; ++k) {
    const int32_t sum = reduce_add(acc[k]) - 128 * t.row_sum;
    t.y[k * t.y_stride] = float(sum) * (t.x_scales[k] * t.scales[0]);
  }
}

template <template <int> class Tile>
void dispatch(const IntRowLayout& l, const IntRowTask& t) {
  switch (t.n_tokens) {
    case 1: return Tile<1>::run(l, t);
    case 2: return Tile<2>::run(l, t);
    case 3: return Tile<3>::run(l, t);
    case 4: return Tile<4>::run(l, t);
    case 5: return Tile<5>::run(l, t);
    case 6: return Tile<6>::run(l, t);
    case 7: return Tile<7>::run(l, t);
    default: return Tile<8>::run(l, t);
  }
}

template <int T>
struct A16W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a16_w8_tile<T>(l, t); }
};
template <int T>
struct A16W4 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a16_w4_tile<T>(l, t); }
};
template <int T>
struct A8W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { a8_w8_tile<T>(l, t); }
};

}  // namespace

IntLinearKernels avx512_int_kernels() { return {dispatch<A16W8>, dispatch<A16W4>, dispatch<A8W8>, true}; }

}  // namespace tessera::cpu
