// AVX-512 dot products (built with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni on top of the AVX2 flags; called only after run-time
// detection): the x86 kernels over VNNI's byte dot product, bit-identical to
// the AVX2 ones (no lane sum here can saturate AVX2's 16-bit pairs), with
// the one-row kernels of the signed block formats replaced by offset ones
// and their eight-row kernels by ones over packed token pairs (Q4_1's pair
// tokens in 512-bit registers too).
#include <immintrin.h>

#include "kernels/cpu/linear/vec_dot_avx512_decode.h"
#include "kernels/cpu/linear/vec_dot_avx512_kquants.h"
#include "kernels/cpu/linear/vec_dot_avx512_offset.h"
#include "kernels/cpu/linear/vec_dot_avx512_row_groups.h"
#include "kernels/cpu/linear/vec_dot_avx512_tokens.h"
#include "kernels/cpu/linear/vec_dot_mxfp4.h"
#include "kernels/cpu/linear/vec_dot_x86_impl.h"

namespace tessera::cpu {
namespace {

// Lane sums of products of unsigned bytes `u` and signed bytes `s`.
inline __m256i dot_lanes(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }

// Sum of products of unsigned bytes `u` and signed bytes `s`, as 8 floats.
inline __m256 dot_us(__m256i u, __m256i s) {
  return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s));
}

}  // namespace

VecDotKernel avx512_vec_dot(DType weight_type) {
  if (weight_type == DType::kMXFP4) {
    VecDotKernel k = {DType::kQ8_0};
    set_mxfp4_kernels<dot_lanes>(k);
    return k;
  }
  VecDotKernel k = x86_quant_vec_dot<dot_us>(weight_type);
  switch (weight_type) {
    case DType::kQ4_0:
      k.fn = dot_offset<Q4_0Offset>;
      k.fn_rows = dot_offset_rows<Q4_0Offset>;
      k.fn8 = nullptr;
      k.fn8_pairs = dot8_offset_pairs<Q4_0Offset>;
      k.fn8_pairs_rows = dot8_offset_pairs_rows<Q4_0Offset, kPairRows>;
      k.fn_row_group = row_group_dot;
      break;
    case DType::kQ5_0:
      k.fn = dot_offset<Q5_0Offset>;
      k.fn_rows = dot_offset_rows<Q5_0Offset>;
      k.fn8 = nullptr;
      k.fn8_pairs = dot8_offset_pairs<Q5_0Offset>;
      k.fn8_pairs_rows = dot8_offset_pairs_rows<Q5_0Offset, kPairRows>;
      k.fn_row_group = row_group_dot;
      break;
    case DType::kQ8_0:
      k.fn = dot_offset<Q8_0Offset>;
      k.fn_rows = dot_offset_rows<Q8_0Offset>;
      k.fn8 = nullptr;
      k.fn8_pairs = dot8_offset_pairs<Q8_0Offset>;
      k.fn8_pairs_rows = dot8_offset_pairs_rows<Q8_0Offset, kPairRows>;
      k.fn_row_group = row_group_dot;
      break;
    case DType::kQ4_1:
      k.fn_rows = dot_q4_1_rows;
      k.fn8 = dot8_q4_1_pairs;
      break;
    case DType::kQ4_K: k.fn8_k_pairs = dot8_q4_k_pairs; break;
    case DType::kQ6_K: k.fn8_k_pairs = dot8_q6_k_pairs; break;
    default: break;
  }
  return k;
}

}  // namespace tessera::cpu
