#pragma once
// Sums in a fixed SIMD lane order, written so any CPU gets the same bits.
// Attention uses these where the rounding of f16 probabilities would turn
// last-bit differences in scores into visibly different outputs, and they
// follow the order of llama.cpp's CPU backend on 512-bit machines so the two
// agree exactly.
#include <cmath>

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
