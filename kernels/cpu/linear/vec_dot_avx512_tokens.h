#pragma once
// AVX-512 kernels for eight activation rows at once (prefill) in the
// 32-element formats: two tokens share each 512-bit register, token 2p in
// the low eight lanes and 2p+1 in the high eight, so one VNNI instruction
// forms both tokens' lane sums and one fused multiply-add accumulates both.
// Lane for lane these are the AVX2 kernels' operations on the same
// integers: the same bits. For vec_dot_avx512.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/q8_0_pairs.h"
#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot_rows_common.h"

namespace tessera::cpu {
namespace {

// Block b's values of tokens j (low half) and j + 1 (high half).
template <class ActBlock>
inline __m512i token_pair(const ActBlock* y0, const ActBlock* y1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load32(y0->qs)), load32(y1->qs), 1);
}

// The scale of token 2p in the low eight lanes, of token 2p + 1 in the high.
inline __m512 pair_scales(__m512 scales8, int p) {
  const __m512i index = _mm512_set_epi32(2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                         2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p);
  return _mm512_permutexvar_ps(index, scales8);
}

inline __m256 low_half(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 high_half(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// Each pair register's two eight-lane sums, low half first.
template <int kPairs = 4>
inline void store_pair_sums(const __m512* acc, float* out) {
  for (int p = 0; p < kPairs; ++p) {
    out[2 * p] = hsum(low_half(acc[p]));
    out[2 * p + 1] = hsum(high_half(acc[p]));
  }
}

// Signed weights read as unsigned q + 128 (Format: the offset view of
// vec_dot_avx512_offset.h, whose own offset is topped up to 128) against
// packed pair blocks, for kRows consecutive weight rows `row_bytes` apart
// (out[8 · r + j]: row r times token j). The accumulation of each pair
// starts at the packed bias, so each lane holds Σ q·y with one VNNI
// instruction and no sign work; each pair block's values, biases and scales
// are loaded once for all the rows.
template <class Format, int kRows>
void dot8_offset_pairs_rows(int64_t n, const void* w, size_t row_bytes, const Q8_0PairBlock* pairs, float* out) {
  using Block = typename Format::Block;
  const Block* x[kRows];
  row_pointers(w, row_bytes, x);
  const __m256i top_up = _mm256_set1_epi8(char(128 - int(uint8_t(Format::kOffset))));
  __m512 acc[kRows][4];
  for (auto& row : acc) {
    for (__m512& v : row) v = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m512i ux[kRows];
    __m512 dx[kRows];
    for (int r = 0; r < kRows; ++r) {
      ux[r] = _mm512_broadcast_i64x4(_mm256_add_epi8(Format::values(x[r][b]), top_up));
      dx[r] = _mm512_set1_ps(fp16(x[r][b].d));
    }
    const Q8_0PairBlock& y = pairs[b];
    for (int p = 0; p < 4; ++p) {
      const __m512i qy = _mm512_load_si512(y.qs[p]);
      const __m512i bias = _mm512_load_si512(y.bias[p]);
      const __m512 dy = _mm512_load_ps(y.d[p]);
      for (int r = 0; r < kRows; ++r) {
        const __m512i sums = _mm512_dpbusd_epi32(bias, ux[r], qy);
        acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dx[r], dy), _mm512_cvtepi32_ps(sums), acc[r][p]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) store_pair_sums(acc[r], out + 8 * r);
}

template <class Format>
void dot8_offset_pairs(int64_t n, const void* w, const Q8_0PairBlock* pairs, float* out) {
  dot8_offset_pairs_rows<Format, 1>(n, w, 0, pairs, out);
}

// Q4_1: unsigned weights times signed activations, plus the minimum terms
// m * s of the eight tokens in one vector, multiplied and added lane by lane
// as the scalar code does.
inline void dot8_q4_1_pairs(int64_t n, const void* w, const void* const* a, const float* dy, const float* sums, float* out) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y[8];
  for (int j = 0; j < 8; ++j) y[j] = static_cast<const BlockQ8_1*>(a[j]);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  __m256 mins = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    mins = _mm256_add_ps(mins, _mm256_mul_ps(_mm256_set1_ps(fp16(x[b].m)), _mm256_loadu_ps(sums + b * 8)));
    const __m512 scales8 = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_set1_ps(fp16(x[b].d)), _mm256_loadu_ps(dy + b * 8)));
    const __m512i qx = _mm512_broadcast_i64x4(unpack_nibbles(x[b].qs));
    for (int p = 0; p < 4; ++p) {
      const __m512 dots = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, qx, token_pair(&y[2 * p][b], &y[2 * p + 1][b])));
      acc[p] = _mm512_fmadd_ps(pair_scales(scales8, p), dots, acc[p]);
    }
  }
  store_pair_sums(acc, out);
  alignas(32) float min_terms[8];
  _mm256_store_ps(min_terms, mins);
  for (int j = 0; j < 8; ++j) out[j] += min_terms[j];
}

}  // namespace
}  // namespace tessera::cpu
