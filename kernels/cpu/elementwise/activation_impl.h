#pragma once
// The gated activation loop, compiled once per instruction set (see
// activation.cc and activation_avx2.cc): the vector lanes perform the scalar
// code's operations, so every build gives the same bits.
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#endif

#include "engine/tensor/half.h"
#include "kernels/cpu/elementwise/activation.h"
#include "kernels/cpu/elementwise/vector_exp.h"

namespace tessera::cpu {

// llama.cpp's GELU table: the f16 result for every f16 input, built once.
const uint16_t* gelu_f16_table();

// out[i] = act(gate[i]) * up[i] for i in [begin, end), one build per
// instruction set.
void gated_activation_range_generic(GatedActivation act, const float* gate, const float* up, int64_t begin, int64_t end,
                                    float* out);
void gated_activation_range_avx2(GatedActivation act, const float* gate, const float* up, int64_t begin, int64_t end,
                                 float* out);

// Internal linkage: each including file gets its own copy, built with its own
// instruction-set flags.
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

inline float silu(float x) { return x / (1.0f + vector_expf(-x)); }

inline float gelu_tanh(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoeff * x * x))); }

// GELU through the table, the way llama.cpp's CPU backend evaluates it:
// inputs are rounded to f16 and so are the results.
inline float gelu_from_table(const uint16_t* table, float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return f16_to_f32(table[f32_to_f16(x)]);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// Eight at a time from `i`; returns where the scalar loop takes over.
inline int64_t gated_activation_vector(GatedActivation act, const float* gate, const float* up, int64_t i, int64_t end,
                                       float* out) {
  if (act == GatedActivation::kSilu) {
    for (; i + 8 <= end; i += 8) {
      const __m256 x = _mm256_loadu_ps(gate + i);
      alignas(32) float negated[8], e[8];
      _mm256_store_ps(negated, _mm256_sub_ps(_mm256_setzero_ps(), x));
      vector_expf8(negated, 0.0f, e);
      const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_load_ps(e)));
      _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
    }
  } else if (act == GatedActivation::kGeluTanhTable) {
    const uint16_t* table = gelu_f16_table();
    for (; i + 8 <= end; i += 8) {
      const __m256 x = _mm256_loadu_ps(gate + i);
      alignas(16) uint16_t halves[8], looked_up[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(halves), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      for (int l = 0; l < 8; ++l) looked_up[l] = table[halves[l]];
      __m256 gelu = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(looked_up)));
      gelu = _mm256_blendv_ps(gelu, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
      gelu = _mm256_blendv_ps(gelu, x, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
      _mm256_storeu_ps(out + i, _mm256_mul_ps(gelu, _mm256_loadu_ps(up + i)));
    }
  }
  return i;
}
#endif

inline void gated_activation_range(GatedActivation act, const float* gate, const float* up, int64_t begin, int64_t end,
                                   float* out) {
  int64_t i = begin;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  i = gated_activation_vector(act, gate, up, i, end, out);
#endif
  switch (act) {
    case GatedActivation::kSilu:
      for (; i < end; ++i) out[i] = silu(gate[i]) * up[i];
      break;
    case GatedActivation::kGeluTanh:
      for (; i < end; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
      break;
    case GatedActivation::kGeluTanhTable: {
      const uint16_t* table = gelu_f16_table();
      for (; i < end; ++i) out[i] = gelu_from_table(table, gate[i]) * up[i];
      break;
    }
    case GatedActivation::kSiluClampedOai:
      for (; i < end; ++i) {
        const float g = std::min(gate[i], ops::kOaiSwiGluLimit);
        const float u = std::min(std::max(up[i], -ops::kOaiSwiGluLimit), ops::kOaiSwiGluLimit);
        out[i] = g / (1.0f + std::exp(ops::kOaiSwiGluAlpha * (-g))) * (u + 1.0f);
      }
      break;
  }
}

}  // namespace
}  // namespace tessera::cpu
