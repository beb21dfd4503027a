#pragma once
// AVX-512 kernels for eight activation rows at once (prefill) in the K-quant
// formats, against Q8_K rows packed as pair blocks: token 2p in the low half
// of each 512-bit register and 2p + 1 in the high half, the weights decoded
// once per super-block for all eight. VNNI's word dot product forms the
// scaled sub-block sums the AVX2 kernels form with a multiply-add and an
// add: every 32-bit lane holds their integer, and each token's float work is
// theirs, so the outputs carry their bits. For vec_dot_avx512.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/q8_k_pairs.h"
#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot_avx512_tokens.h"
#include "kernels/cpu/linear/vec_dot_x86_impl.h"

namespace tessera::cpu {
namespace {

inline void dot8_q4_k_pairs(int64_t n, const void* w, const Q8_KPairBlock* pairs, float* out) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  __m512 acc[4];
  __m256 acc_mins[4];
  for (int p = 0; p < 4; ++p) {
    acc[p] = _mm512_setzero_ps();
    acc_mins[p] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ4_K& xb = x[b];
    const __m128i scales_mins = q4k_scales_and_mins(xb.scales);
    alignas(16) uint8_t scales[16];  // one store, so each byte load below is forwarded from it
    _mm_store_si128(reinterpret_cast<__m128i*>(scales), scales_mins);
    const __m256i mins16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins)));
    __m512i q[8];  // sub-block k's 32 values in both halves
    for (int j = 0; j < 4; ++j) {
      const __m512i bits = _mm512_broadcast_i64x4(load32(xb.qs + 32 * j));
      q[2 * j] = _mm512_and_si512(bits, low_mask);
      q[2 * j + 1] = _mm512_and_si512(_mm512_srli_epi16(bits, 4), low_mask);
    }
    const __m512 d = _mm512_set1_ps(fp16(xb.d));
    const __m256 dmin = _mm256_set1_ps(fp16(xb.dmin));
    const Q8_KPairBlock& y = pairs[b];
    for (int p = 0; p < 4; ++p) {
      // Two chains of word dot products, so that neither waits on the other.
      __m512i sumi[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
      for (int k = 0; k < 8; ++k) {
        const __m512i products = _mm512_maddubs_epi16(q[k], _mm512_load_si512(y.qs[k][p]));
        sumi[k % 2] = _mm512_dpwssd_epi32(sumi[k % 2], products, _mm512_set1_epi16(scales[k]));
      }
      acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(y.d[p]), d), _mm512_cvtepi32_ps(_mm512_add_epi32(sumi[0], sumi[1])),
                               acc[p]);
      const __m256i min_sums = _mm256_madd_epi16(mins16, _mm256_load_si256(reinterpret_cast<const __m256i*>(y.sums32[p])));
      acc_mins[p] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(y.neg_d[p]), dmin), _mm256_cvtepi32_ps(min_sums), acc_mins[p]);
    }
  }
  for (int p = 0; p < 4; ++p) {
    out[2 * p] = finish_q4_k(low_half(acc[p]), _mm256_castps256_ps128(acc_mins[p]));
    out[2 * p + 1] = finish_q4_k(high_half(acc[p]), _mm256_extractf128_ps(acc_mins[p], 1));
  }
}

// Q6_K's weights (stored as q + 32) against eight tokens; the surplus
// 32 · Σ scale · bsum is taken off each lane at the end, as the AVX2 kernel
// takes it off.
inline void dot8_q6_k_pairs(int64_t n, const void* w, const Q8_KPairBlock* pairs, float* out) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  const __m512i two_bits = _mm512_set1_epi8(0x03);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ6_K& xb = x[b];
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.scales)));
    const __m512i scales16_twice = _mm512_broadcast_i64x4(scales16);
    __m512i q[8];  // chunk 4 · half + c: 32 values in both halves
    alignas(32) __m256i chunk_scales[8];  // chunk k's first 16 values' scale × 8, then its last 16's × 8
    for (int k = 0; k < 8; ++k) {
      const __m256i index = _mm256_set_m128i(_mm_set1_epi16(short(2 * k + 1)), _mm_set1_epi16(short(2 * k)));
      chunk_scales[k] = _mm256_permutexvar_epi16(index, scales16);
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = xb.ql + 64 * half;
      const __m512i qh = _mm512_broadcast_i64x4(load32(xb.qh + 32 * half));
      const __m512i ql_bytes[2] = {_mm512_broadcast_i64x4(load32(ql)), _mm512_broadcast_i64x4(load32(ql + 32))};
      for (int c = 0; c < 4; ++c) {
        const __m512i low = c < 2 ? _mm512_and_si512(ql_bytes[c], low_mask)
                                  : _mm512_and_si512(_mm512_srli_epi16(ql_bytes[c - 2], 4), low_mask);
        const __m512i high = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * c), two_bits), 4);
        q[4 * half + c] = _mm512_or_si512(low, high);
      }
    }
    const __m512 d = _mm512_set1_ps(fp16(xb.d));
    const Q8_KPairBlock& y = pairs[b];
    for (int p = 0; p < 4; ++p) {
      const __m512i correction = _mm512_slli_epi32(_mm512_madd_epi16(_mm512_load_si512(y.sums16[p]), scales16_twice), 5);
      __m512i sums[2] = {_mm512_sub_epi32(_mm512_setzero_si512(), correction), _mm512_setzero_si512()};
      for (int k = 0; k < 8; ++k) {
        const __m512i products = _mm512_maddubs_epi16(q[k], _mm512_load_si512(y.qs[k][p]));
        const __m512i scale = _mm512_broadcast_i64x4(_mm256_load_si256(chunk_scales + k));
        sums[k % 2] = _mm512_dpwssd_epi32(sums[k % 2], products, scale);
      }
      const __m512i sumi = _mm512_add_epi32(sums[0], sums[1]);
      acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(y.d[p]), d), _mm512_cvtepi32_ps(sumi), acc[p]);
    }
  }
  store_pair_sums(acc, out);
}

}  // namespace
}  // namespace tessera::cpu
