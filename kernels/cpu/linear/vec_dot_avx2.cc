// AVX2 dot products (this file is built with -mavx2 -mfma -mf16c and only
// called after run-time detection). Integer products use the
// unsigned-by-signed byte multiply, with signs moved onto the activations.
#include <immintrin.h>

#include "engine/tensor/half.h"
#include "kernels/cpu/linear/vec_dot_avx2_kquants.h"
#include "kernels/cpu/linear/vec_dot_avx2_row_groups.h"
#include "kernels/cpu/linear/vec_dot_avx2_rows.h"
#include "kernels/cpu/linear/vec_dot_mxfp4.h"
#include "kernels/cpu/linear/vec_dot_x86_impl.h"

namespace tessera::cpu {
namespace {

float dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float dot_f16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    const __m256 yv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    acc = _mm256_fmadd_ps(xv, yv, acc);
  }
  float sum = hsum(acc);
  for (; i < n; ++i) sum += fp16(x[i]) * fp16(y[i]);
  return sum;
}

// Eight bf16 values as f32: the upper halves of eight 32-bit lanes.
inline __m256 widen_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// bf16 weights widened in registers (no f32 copy of them), against
// bf16-rounded activations: each product is exact; four chains of sums.
float dot_bf16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(widen_bf16(x + i), widen_bf16(y + i), acc0);
    acc1 = _mm256_fmadd_ps(widen_bf16(x + i + 8), widen_bf16(y + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(widen_bf16(x + i + 16), widen_bf16(y + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(widen_bf16(x + i + 24), widen_bf16(y + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(widen_bf16(x + i), widen_bf16(y + i), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
  return sum;
}

// The lane sums of unsigned by signed bytes with two multiply-adds.
inline __m256i madd_lanes(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }

}  // namespace

VecDotKernel avx2_vec_dot(DType weight_type) {
  if (weight_type == DType::kMXFP4) {
    VecDotKernel k = {DType::kQ8_0};
    set_mxfp4_kernels<madd_lanes>(k);
    return k;
  }
  if (weight_type == DType::kF32 || weight_type == DType::kF16 || weight_type == DType::kBF16) {
    return pick_vec_dot(weight_type, {{DType::kF32, dot_f32}, {DType::kF16, dot_f16}, {DType::kBF16, dot_bf16}});
  }
  VecDotKernel k = x86_quant_vec_dot<madd_us>(weight_type);
  switch (weight_type) {
    case DType::kQ4_0:
    case DType::kQ5_0:
      k.fn_rows = weight_type == DType::kQ4_0 ? dot_signed_rows<BlockQ4_0, q4_0_values> : dot_signed_rows<BlockQ5_0, q5_0_values>;
      k.fn_row_group = row_group_dot_avx2;
      k.row_group_offset = kAvx2RowGroupOffset;
      break;
    case DType::kQ8_0: k.fn_rows = dot_signed_rows<BlockQ8_0, q8_0_values>; break;
    case DType::kQ4_1: k.fn_rows = dot_q4_1_rows; break;
    case DType::kQ4_K: k.fn8_k_pairs = dot8_q4_k_pairs_avx2; break;
    case DType::kQ6_K: k.fn8_k_pairs = dot8_q6_k_pairs_avx2; break;
    default: break;
  }
  return k;
}

}  // namespace tessera::cpu
