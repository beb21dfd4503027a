#pragma once
// AVX-512 kernels for a few activation rows (decode, or a speculative
// step's verification) against kDecodeRows weight rows, in the 32-element
// formats. Two rows share each 512-bit register (the first in the low eight
// lanes, the second in the high), so one VNNI instruction forms both rows'
// lane sums and one fused multiply-add accumulates both. Each weight block
// is decoded once for all the tokens; each token's activation block, offset
// bias and scale are read once for all the rows, and the rows' four f16
// scales are widened by one conversion. A one-row kernel waits on its own
// chain of multiply-adds block after block; here two chains per token each
// carry two rows. Lane for lane these are the one-row kernels' operations on
// the same integers: the same bits. For vec_dot_avx512.cc only.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot.h"
#include "kernels/cpu/linear/vec_dot_rows_common.h"
#include "kernels/cpu/linear/vec_dot_avx512_offset.h"
#include "kernels/cpu/linear/vec_dot_avx512_tokens.h"

namespace tessera::cpu {
namespace {

// The 16 bytes of packed nibbles of two blocks -> 64 bytes: block 0's low
// then high nibbles (unpack_nibbles' order), then block 1's.
inline __m512i unpack_nibbles_pair(const uint8_t* p0, const uint8_t* p1) {
  const __m256i packed = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0))),
                                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)), 1);
  const __m512i twice = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_zextsi256_si512(packed));
  // Shift the second and fourth 16-byte lanes (16-bit elements 8–15, 24–31).
  const __m512i shifted = _mm512_mask_srli_epi16(twice, __mmask32(0xff00ff00u), twice, 4);
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
}

// Lane i of `v` in the low eight lanes, lane j in the high eight.
inline __m512 pair_broadcast(__m128 v, int i, int j) {
  const __m512i index = _mm512_setr_epi32(i, i, i, i, i, i, i, i, j, j, j, j, j, j, j, j);
  return _mm512_permutexvar_ps(index, _mm512_zextps128_ps512(v));
}

// One block of two rows of a signed-byte format, read as unsigned q + c
// (vec_dot_avx512_offset.h): row 0's in the low half, row 1's in the high.
template <class Format>
__m512i offset_values_pair(const typename Format::Block& b0, const typename Format::Block& b1);
template <>
inline __m512i offset_values_pair<Q4_0Offset>(const BlockQ4_0& b0, const BlockQ4_0& b1) {
  return unpack_nibbles_pair(b0.qs, b1.qs);
}
template <>
inline __m512i offset_values_pair<Q5_0Offset>(const BlockQ5_0& b0, const BlockQ5_0& b1) {
  uint32_t bits0, bits1;
  std::memcpy(&bits0, b0.qh, 4);
  std::memcpy(&bits1, b1.qh, 4);
  const __m512i nibbles = unpack_nibbles_pair(b0.qs, b1.qs);
  return _mm512_mask_add_epi8(nibbles, _cvtu64_mask64(uint64_t(bits1) << 32 | bits0), nibbles, _mm512_set1_epi8(16));
}
template <>
inline __m512i offset_values_pair<Q8_0Offset>(const BlockQ8_0& b0, const BlockQ8_0& b1) {
  const __m512i q = _mm512_inserti64x4(_mm512_zextsi256_si512(load32(b0.qs)), load32(b1.qs), 1);
  return _mm512_xor_si512(q, _mm512_set1_epi8(char(0x80)));
}

// dot_offset for four rows and kTokens tokens: each weight block is decoded
// once for all the tokens, and each token's activation block, offset bias
// and scale once for the four rows.
template <class Format, int kTokens>
void dot_offset_rows_tokens(int64_t n, const void* w, size_t row_stride, const void* const* a, float* out) {
  using Block = typename Format::Block;
  const Block* x[kDecodeRows];
  row_pointers(w, row_stride, x);
  const BlockQ8_0* y[kTokens];
  for (int t = 0; t < kTokens; ++t) y[t] = static_cast<const BlockQ8_0*>(a[t]);
  const __m512i offset = _mm512_set1_epi8(Format::kOffset);
  __m512 acc[kTokens][2];
  for (auto& token : acc) token[0] = token[1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m128 dx = halves(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
    const __m512i q[2] = {offset_values_pair<Format>(x[0][b], x[1][b]), offset_values_pair<Format>(x[2][b], x[3][b])};
    for (int t = 0; t < kTokens; ++t) {
      const __m512i qy = _mm512_broadcast_i64x4(load32(y[t][b].qs));
      const __m512i bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, qy));
      const __m128 scales = _mm_mul_ps(dx, _mm_set1_ps(fp16(y[t][b].d)));
      for (int p = 0; p < 2; ++p) {
        const __m512i sums = _mm512_dpbusd_epi32(bias, q[p], qy);
        acc[t][p] = _mm512_fmadd_ps(pair_broadcast(scales, 2 * p, 2 * p + 1), _mm512_cvtepi32_ps(sums), acc[t][p]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) store_pair_sums<2>(acc[t], out + t * kDecodeRows);
}

template <class Format>
void dot_offset_rows(int64_t n, const void* w, size_t row_stride, const void* const* a, int n_tokens, float* out) {
  for_token_count(n_tokens, [&]<int kTokens>() { dot_offset_rows_tokens<Format, kTokens>(n, w, row_stride, a, out); });
}

// dot_q4_1 for four rows and kTokens tokens; the minimum terms m·s of the
// four rows run in the lanes of one vector per token, each added as the
// one-row kernel adds it.
template <int kTokens>
void dot_q4_1_rows_tokens(int64_t n, const void* w, size_t row_stride, const void* const* a, float* out) {
  const BlockQ4_1* x[kDecodeRows];
  row_pointers(w, row_stride, x);
  const BlockQ8_1* y[kTokens];
  for (int t = 0; t < kTokens; ++t) y[t] = static_cast<const BlockQ8_1*>(a[t]);
  __m512 acc[kTokens][2];
  __m128 mins[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    mins[t] = _mm_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m128 dx = halves(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
    const __m128 m = halves(x[0][b].m, x[1][b].m, x[2][b].m, x[3][b].m);
    const __m512i q[2] = {unpack_nibbles_pair(x[0][b].qs, x[1][b].qs), unpack_nibbles_pair(x[2][b].qs, x[3][b].qs)};
    for (int t = 0; t < kTokens; ++t) {
      const __m512i qy = _mm512_broadcast_i64x4(load32(y[t][b].qs));
      const __m128 dy_sy = halves(y[t][b].d, y[t][b].s, 0, 0);
      const __m128 scales = _mm_mul_ps(dx, _mm_broadcastss_ps(dy_sy));
      mins[t] = _mm_add_ps(mins[t], _mm_mul_ps(m, _mm_permute_ps(dy_sy, 0x55)));
      for (int p = 0; p < 2; ++p) {
        const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[p], qy);
        acc[t][p] = _mm512_fmadd_ps(pair_broadcast(scales, 2 * p, 2 * p + 1), _mm512_cvtepi32_ps(sums), acc[t][p]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    alignas(16) float min_terms[4];
    _mm_store_ps(min_terms, mins[t]);
    store_pair_sums<2>(acc[t], out + t * kDecodeRows);
    for (int r = 0; r < kDecodeRows; ++r) out[t * kDecodeRows + r] += min_terms[r];
  }
}

inline void dot_q4_1_rows(int64_t n, const void* w, size_t row_stride, const void* const* a, int n_tokens, float* out) {
  for_token_count(n_tokens, [&]<int kTokens>() { dot_q4_1_rows_tokens<kTokens>(n, w, row_stride, a, out); });
}

}  // namespace
}  // namespace tessera::cpu
