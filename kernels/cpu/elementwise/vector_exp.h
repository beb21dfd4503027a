#pragma once
// The exponential the CPU kernels use wherever bit-for-bit agreement with
// llama.cpp's CPU backend matters (softmax, SiLU).
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace tessera::cpu {

// e^x by range reduction to x = n ln2 + b and a degree-5 polynomial in b,
// accurate to about 1.5 ulp; the coefficients are those of the widely used
// single-precision vector exp (ARM optimized-routines), which llama.cpp's
// CPU backend uses too.
static inline float vector_expf(float x) {
  const float shift = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shift);
  const float n = z - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192.0f) return n > 0.0f ? INFINITY : 0.0f;
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                           std::fma(0x1.ffffecp-1f, b, 1.0f));
  // j * 2^n. Multiplying by an exact power of two rounds exactly as ldexp
  // does, without its library call; outside the normal exponents ldexp
  // handles the edge.
  const int e = int(n);
  if (e >= -126 && e <= 127) return j * std::bit_cast<float>(uint32_t(e + 127) << 23);
  return std::ldexp(j, e);
}

#if defined(__AVX2__) && defined(__FMA__)
// out[i] = vector_expf(in[i] - offset) for eight values, lane by lane the
// same operations. Lanes whose power of two leaves the normal exponents
// (results below about 1e-38 or overflowing) are rare: the eight then take
// the scalar path.
static inline void vector_expf8(const float* in, float offset, float* out) {
  const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(in), _mm256_set1_ps(offset));
  const __m256 shift = _mm256_set1_ps(0x1.8p23f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shift), shift);
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  if (_mm256_movemask_ps(_mm256_cmp_ps(abs_n, _mm256_set1_ps(126.0f), _CMP_GT_OQ)) != 0) {
    alignas(32) float shifted[8];
    _mm256_store_ps(shifted, x);
    for (int i = 0; i < 8; ++i) out[i] = vector_expf(shifted[i]);
    return;
  }
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  const __m256i exponent = _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127));
  _mm256_storeu_ps(out, _mm256_mul_ps(j, _mm256_castsi256_ps(_mm256_slli_epi32(exponent, 23))));
}
#endif

}  // namespace tessera::cpu
