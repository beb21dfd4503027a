#pragma once
// Sums in a fixed SIMD lane order, written so any CPU gets the same bits.
// Attention uses these where the rounding of f16 probabilities would turn
// last-bit differences in scores into visibly different outputs, and they
// follow the order of llama.cpp's CPU backend on 512-bit machines so the two
// agree exactly.
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace tessera::cpu {

constexpr int kLanes = 16;

// The reduction of one 16-lane register: halves, then quarters, then pairs.
static inline float reduce_16_lanes(const float* a) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = a[i + 8] + a[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[i + 4] + t3[i];
  return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

#if defined(__AVX512F__)
// reduce_16_lanes of a register: the same additions, as vector operations.
static inline float reduce_16_lanes(__m512 a) {
  const __m256 halves = _mm256_add_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)), _mm512_castps512_ps256(a));
  const __m128 quarters = _mm_add_ps(_mm256_extractf128_ps(halves, 1), _mm256_castps256_ps128(halves));
  const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));  // (0 + 2, 1 + 3)
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// reduce_16_lanes of lanes 0-7 (`low`) and 8-15 (`high`): the same
// additions, as vector operations.
static inline float reduce_16_lanes(__m256 low, __m256 high) {
  const __m256 halves = _mm256_add_ps(high, low);
  const __m128 quarters = _mm_add_ps(_mm256_extractf128_ps(halves, 1), _mm256_castps256_ps128(halves));
  const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));  // (0 + 2, 1 + 3)
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}
#endif

// sum_i x[i] * y[i] with one 16-lane accumulator: lane l takes i = l, l+16, …
// by fused multiply-add, then the lanes are reduced. For n % 16 == 0.
static inline float lane16_dot(const float* x, const float* y, int n) {
  float acc[kLanes] = {};
#if defined(__AVX2__) && defined(__FMA__)
  // The same per-lane fused multiply-adds, eight lanes per instruction.
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int i = 0; i < n; i += kLanes) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), hi);
  }
  _mm256_storeu_ps(acc, lo);
  _mm256_storeu_ps(acc + 8, hi);
#else
  for (int i = 0; i < n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] = std::fma(x[i + l], y[i + l], acc[l]);
  }
#endif
  return reduce_16_lanes(acc);
}

#if defined(__AVX2__) && defined(__FMA__)
static inline __m256 load8_as_f32(const float* p) { return _mm256_loadu_ps(p); }
#if defined(__F16C__)
static inline __m256 load8_as_f32(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
#endif
#if defined(__AVX512F__)
static inline __m512 load16_as_f32(const float* p) { return _mm512_loadu_ps(p); }
static inline __m512 load16_as_f32(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#endif
#endif

#if defined(__AVX2__) && defined(__FMA__)
// The last steps of reduce_16_lanes for eight vectors at once: folded[v]
// lane i holds acc[i + 8] + acc[i] of vector v; lane v of the result is
// vector v's sum.
__attribute__((always_inline)) static inline __m256 reduce_folded8(const __m256 (&folded)[8]) {
  // Transpose 8x8: lanes[i] holds lane i of every vector.
  const __m256 a0 = _mm256_unpacklo_ps(folded[0], folded[1]), a1 = _mm256_unpackhi_ps(folded[0], folded[1]);
  const __m256 a2 = _mm256_unpacklo_ps(folded[2], folded[3]), a3 = _mm256_unpackhi_ps(folded[2], folded[3]);
  const __m256 a4 = _mm256_unpacklo_ps(folded[4], folded[5]), a5 = _mm256_unpackhi_ps(folded[4], folded[5]);
  const __m256 a6 = _mm256_unpacklo_ps(folded[6], folded[7]), a7 = _mm256_unpackhi_ps(folded[6], folded[7]);
  const __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xee);
  const __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xee);
  const __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xee);
  const __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xee);
  __m256 lanes[8];
  lanes[0] = _mm256_permute2f128_ps(b0, b4, 0x20), lanes[4] = _mm256_permute2f128_ps(b0, b4, 0x31);
  lanes[1] = _mm256_permute2f128_ps(b1, b5, 0x20), lanes[5] = _mm256_permute2f128_ps(b1, b5, 0x31);
  lanes[2] = _mm256_permute2f128_ps(b2, b6, 0x20), lanes[6] = _mm256_permute2f128_ps(b2, b6, 0x31);
  lanes[3] = _mm256_permute2f128_ps(b3, b7, 0x20), lanes[7] = _mm256_permute2f128_ps(b3, b7, 0x31);
  __m256 quarter[4];
  for (int i = 0; i < 4; ++i) quarter[i] = _mm256_add_ps(lanes[i + 4], lanes[i]);
  return _mm256_add_ps(_mm256_add_ps(quarter[0], quarter[2]), _mm256_add_ps(quarter[1], quarter[3]));
}
#endif

// lane16_dot of x with eight vectors y + i * stride at once, the same bits
// for each: the 16-lane reductions run side by side across the eight, after
// a transpose, instead of one scalar tree per vector.
// Y: float, or uint16_t (f16 values, widened exactly as they are loaded;
// on builds with F16C only).
#if defined(__AVX2__) && defined(__FMA__)
// The eight sums as one vector, vector v's in lane v.
template <class Y>
__attribute__((always_inline)) static inline __m256 lane16_dot8_vector(const float* x, const Y* y, size_t stride, int n) {
  __m256 folded[8];  // folded[v] lane i: acc[i + 8] + acc[i] of vector v
#if defined(__AVX512F__)
  // One 16-lane accumulator a vector, eight independent chains.
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int i = 0; i < n; i += kLanes) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    for (int v = 0; v < 8; ++v) acc[v] = _mm512_fmadd_ps(xv, load16_as_f32(y + size_t(v) * stride + i), acc[v]);
  }
  for (int v = 0; v < 8; ++v) {
    folded[v] = _mm256_add_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[v]), 1)), _mm512_castps512_ps256(acc[v]));
  }
#else
  // Four vectors side by side: eight independent chains of multiply-adds
  // keep both FMA units busy where one vector's two chains would wait on
  // their own latency.
#pragma GCC unroll 2
  for (int v0 = 0; v0 < 8; v0 += 4) {
    const Y* yv[4];
    __m256 lo[4], hi[4];
    for (int v = 0; v < 4; ++v) {
      yv[v] = y + size_t(v0 + v) * stride;
      lo[v] = hi[v] = _mm256_setzero_ps();
    }
    for (int i = 0; i < n; i += kLanes) {
      const __m256 x_lo = _mm256_loadu_ps(x + i), x_hi = _mm256_loadu_ps(x + i + 8);
      for (int v = 0; v < 4; ++v) {
        lo[v] = _mm256_fmadd_ps(x_lo, load8_as_f32(yv[v] + i), lo[v]);
        hi[v] = _mm256_fmadd_ps(x_hi, load8_as_f32(yv[v] + i + 8), hi[v]);
      }
    }
    for (int v = 0; v < 4; ++v) folded[v0 + v] = _mm256_add_ps(hi[v], lo[v]);
  }
#endif
  return reduce_folded8(folded);
}
#endif

template <class Y>
static inline void lane16_dot8(const float* x, const Y* y, size_t stride, int n, float* out) {
#if defined(__AVX2__) && defined(__FMA__)
  _mm256_storeu_ps(out, lane16_dot8_vector(x, y, stride, n));
#else
  for (int v = 0; v < 8; ++v) out[v] = lane16_dot(x, y + size_t(v) * stride, n);
#endif
}

#if defined(__AVX2__) && defined(__FMA__)
// lane16_dot8_vector for kRows vectors x[r] at once, sums[r] lane v the sum
// of x[r] with vector v of y: each element of y is loaded (and widened)
// once for every row. One y vector at a time: its 2 * kRows chains are
// independent of the next vector's, which the processor overlaps.
template <int kRows, class Y>
__attribute__((always_inline)) static inline void lane16_dot8_rows(const float* const* x, const Y* y, size_t stride, int n,
                                                                  __m256 (&sums)[kRows]) {
  __m256 folded[kRows][8];
  for (int v = 0; v < 8; ++v) {
    const Y* yv = y + size_t(v) * stride;
    __m256 lo[kRows], hi[kRows];
    for (int r = 0; r < kRows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int i = 0; i < n; i += kLanes) {
      const __m256 y_lo = load8_as_f32(yv + i), y_hi = load8_as_f32(yv + i + 8);
      for (int r = 0; r < kRows; ++r) {
        lo[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i), y_lo, lo[r]);
        hi[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x[r] + i + 8), y_hi, hi[r]);
      }
    }
    for (int r = 0; r < kRows; ++r) folded[r][v] = _mm256_add_ps(hi[r], lo[r]);
  }
  for (int r = 0; r < kRows; ++r) sums[r] = reduce_folded8(folded[r]);
}
#endif

// The same sum for any n: four accumulators over 64-element steps, the tail
// added in double.
static inline float lane64_dot(const float* x, const float* y, int n) {
  float acc[4][kLanes] = {};
  const int whole = n - n % (4 * kLanes);
  for (int i = 0; i < whole; i += 4 * kLanes) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < kLanes; ++l) acc[j][l] = std::fma(x[i + j * kLanes + l], y[i + j * kLanes + l], acc[j][l]);
    }
  }
  for (int l = 0; l < kLanes; ++l) acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  double sum = whole > 0 ? double(reduce_16_lanes(acc[0])) : 0.0;
  for (int i = whole; i < n; ++i) sum += double(x[i] * y[i]);
  return float(sum);
}

static inline float ordered_dot(const float* x, const float* y, int n) {
  return n % kLanes == 0 ? lane16_dot(x, y, n) : lane64_dot(x, y, n);
}

}  // namespace tessera::cpu
