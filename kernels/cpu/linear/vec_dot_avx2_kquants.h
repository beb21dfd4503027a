#pragma once
// AVX2 kernels for eight activation rows at once (prefill) in the K-quant
// formats, against Q8_K rows packed as pair blocks (q8_k_pairs.h). A
// super-block is taken one 32-value chunk at a time: the chunk's weights and
// its scale are decoded once and multiplied into all eight tokens' running
// integer sums, which stay in registers, where the four-token kernels decode
// every chunk for four tokens and rebuild its scale for each. Every token's
// 32-bit lanes end each super-block with the integers dot_q4_k / dot_q6_k
// form (integer sums are exact in any order), and its float work is theirs,
// so the outputs carry their bits. For vec_dot_avx2.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/q8_k_pairs.h"
#include "kernels/cpu/linear/vec_dot_x86_impl.h"

namespace tessera::cpu {
namespace {

// Token t's 32 values of chunk k in a pair block: (32) int8.
inline __m256i pair_token_values(const Q8_KPairBlock& y, int k, int t) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(y.qs[k][t / 2] + 32 * (t % 2)));
}

// sumi[t] += the scaled lane sums of chunk k's weights `q` (unsigned bytes)
// times token t's values, for the eight tokens. The empty asm keeps each sum
// one register added into chunk after chunk: left free, GCC reassociates the
// adds across chunks and spills the partial sums that needs.
inline void add_chunk_products(__m256i (&sumi)[8], __m256i q, __m256i scale, const Q8_KPairBlock& y, int k) {
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) {
    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, pair_token_values(y, k, t)), scale));
    asm("" : "+x"(sumi[t]));
  }
}

inline void dot8_q4_k_pairs_avx2(int64_t n, const void* w, const Q8_KPairBlock* pairs, float* out) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  __m256 acc[8];
  __m256 acc_mins[4];  // pair p: token 2p's four lanes, then 2p + 1's
  for (int t = 0; t < 8; ++t) acc[t] = _mm256_setzero_ps();
  for (int p = 0; p < 4; ++p) acc_mins[p] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ4_K& xb = x[b];
    const Q8_KPairBlock& y = pairs[b];
    const __m128i scales_mins = q4k_scales_and_mins(xb.scales);
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    const __m256i mins16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins)));
    __m256i sumi[8];
    for (__m256i& v : sumi) v = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load32(xb.qs + 32 * j);
      const __m256i scale_lo = _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(short(0x0100 + 0x0202 * (2 * j))));
      add_chunk_products(sumi, _mm256_and_si256(bits, low_mask), scale_lo, y, 2 * j);
      const __m256i scale_hi = _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(short(0x0100 + 0x0202 * (2 * j + 1))));
      add_chunk_products(sumi, _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_mask), scale_hi, y, 2 * j + 1);
    }
    const __m256 d = _mm256_set1_ps(fp16(xb.d));
    for_eight_rows([&]<int J>() {
      const __m256 scale = _mm256_mul_ps(_mm256_load_ps(y.d[J / 2] + 8 * (J % 2)), d);
      acc[J] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sumi[J]), acc[J]);
    });
    const __m256 dmin = _mm256_set1_ps(fp16(xb.dmin));
    for (int p = 0; p < 4; ++p) {
      const __m256i min_sums = _mm256_madd_epi16(mins16, _mm256_load_si256(reinterpret_cast<const __m256i*>(y.sums32[p])));
      acc_mins[p] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_load_ps(y.neg_d[p]), dmin), _mm256_cvtepi32_ps(min_sums), acc_mins[p]);
    }
  }
  for (int p = 0; p < 4; ++p) {
    out[2 * p] = finish_q4_k(acc[2 * p], _mm256_castps256_ps128(acc_mins[p]));
    out[2 * p + 1] = finish_q4_k(acc[2 * p + 1], _mm256_extractf128_ps(acc_mins[p], 1));
  }
}

// Q6_K's chunk k = 4 · half + c (stored as q + 32): (32) uint8.
inline __m256i q6_k_chunk(const BlockQ6_K& x, int half, int c) {
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i ql = load32(x.ql + 64 * half + 32 * (c % 2));
  const __m256i low = c < 2 ? _mm256_and_si256(ql, low_mask) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low_mask);
  const __m256i qh = load32(x.qh + 32 * half);
  const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), _mm256_set1_epi8(0x03)), 4);
  return _mm256_or_si256(low, high);
}

// Q6_K against eight tokens; the surplus 32 · Σ scale · bsum of the stored
// offset is taken off each token's lanes at the end, as dot_q6_k takes it off.
inline void dot8_q6_k_pairs_avx2(int64_t n, const void* w, const Q8_KPairBlock* pairs, float* out) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  __m256 acc[8];
  for (int t = 0; t < 8; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ6_K& xb = x[b];
    const Q8_KPairBlock& y = pairs[b];
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.scales)));
    __m256i sumi[8];
    for (__m256i& v : sumi) v = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      // This half's eight scales in both 128-bit halves.
      const __m256i half_scales = half == 0 ? _mm256_permute2x128_si256(scales16, scales16, 0x00)
                                            : _mm256_permute2x128_si256(scales16, scales16, 0x11);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        // The chunk's first 16 values' scale in the low half's 16-bit lanes, its last 16's in the high half's.
        const short low = short(0x0100 + 0x0404 * c), high = short(0x0302 + 0x0404 * c);
        const __m256i scale = _mm256_shuffle_epi8(half_scales, _mm256_set_m128i(_mm_set1_epi16(high), _mm_set1_epi16(low)));
        add_chunk_products(sumi, q6_k_chunk(xb, half, c), scale, y, 4 * half + c);
      }
    }
    const __m256 d = _mm256_set1_ps(fp16(xb.d));
    for_eight_rows([&]<int J>() {
      const __m256i bsums = _mm256_load_si256(reinterpret_cast<const __m256i*>(y.sums16[J / 2] + 16 * (J % 2)));
      const __m256i correction = _mm256_slli_epi32(_mm256_madd_epi16(bsums, scales16), 5);
      const __m256 scale = _mm256_mul_ps(_mm256_load_ps(y.d[J / 2] + 8 * (J % 2)), d);
      acc[J] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[J], correction)), acc[J]);
    });
  }
  for (int t = 0; t < 8; ++t) out[t] = hsum(acc[t]);
}

}  // namespace
}  // namespace tessera::cpu
