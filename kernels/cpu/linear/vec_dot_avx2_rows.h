#pragma once
// AVX2 kernels for a few activation rows (decode, or a speculative step's
// verification) against kDecodeRows weight rows, in the 32-element formats.
// A one-row kernel waits on its own chain of multiply-adds block after
// block; here the four rows' chains run side by side, each token's
// activation block and scale are read once for the four rows, and the rows'
// four f16 scales are widened by one conversion. Per (row, token) these are
// the one-row kernels' operations on the same integers, in the same order:
// the same bits. Tokens go two at a time (four rows by two tokens fill the
// sixteen registers); a pair re-reads its weight blocks from L1.
// For vec_dot_avx2.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot.h"
#include "kernels/cpu/linear/vec_dot_rows_common.h"

namespace tessera::cpu {
namespace {

// Rows [0, 4) of the signed formats (Q4_0, Q5_0, Q8_0) against kTokens
// (1 or 2) tokens: dot_signed's sign trick, row by row.
template <class Block, __m256i (*values)(const Block&), int kTokens>
void dot_signed_rows_tokens(int64_t n, const Block* const (&x)[kDecodeRows], const void* const* a, float* out) {
  const BlockQ8_0* y[kTokens];
  for (int t = 0; t < kTokens; ++t) y[t] = static_cast<const BlockQ8_0*>(a[t]);
  __m256 acc[kTokens][kDecodeRows];
  for (auto& token : acc) {
    for (__m256& v : token) v = _mm256_setzero_ps();
  }
  alignas(16) float scale[kTokens][4];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m128 dx = halves(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
    for (int t = 0; t < kTokens; ++t) _mm_store_ps(scale[t], _mm_mul_ps(dx, _mm_set1_ps(fp16(y[t][b].d))));
    __m256i qx[kDecodeRows];
    for (int r = 0; r < kDecodeRows; ++r) qx[r] = values(x[r][b]);
    for (int t = 0; t < kTokens; ++t) {
      const __m256i qy = load32(y[t][b].qs);
      for (int r = 0; r < kDecodeRows; ++r) {
        const __m256 sums = madd_us(_mm256_sign_epi8(qx[r], qx[r]), _mm256_sign_epi8(qy, qx[r]));
        acc[t][r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&scale[t][r]), sums, acc[t][r]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    for (int r = 0; r < kDecodeRows; ++r) out[t * kDecodeRows + r] = hsum(acc[t][r]);
  }
}

// Rows [0, 4) of Q4_1 against kTokens tokens: dot_q4_1's scaled block sums,
// and the minimum terms m·s of the four rows in the lanes of one vector per
// token, each multiplied and added as the one-row kernel does.
template <int kTokens>
void dot_q4_1_rows_tokens(int64_t n, const BlockQ4_1* const (&x)[kDecodeRows], const void* const* a, float* out) {
  const BlockQ8_1* y[kTokens];
  for (int t = 0; t < kTokens; ++t) y[t] = static_cast<const BlockQ8_1*>(a[t]);
  __m256 acc[kTokens][kDecodeRows];
  __m128 mins[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    for (__m256& v : acc[t]) v = _mm256_setzero_ps();
    mins[t] = _mm_setzero_ps();
  }
  alignas(16) float scale[kTokens][4];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m128 dx = halves(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d);
    const __m128 m = halves(x[0][b].m, x[1][b].m, x[2][b].m, x[3][b].m);
    for (int t = 0; t < kTokens; ++t) {
      _mm_store_ps(scale[t], _mm_mul_ps(dx, _mm_set1_ps(fp16(y[t][b].d))));
      mins[t] = _mm_add_ps(mins[t], _mm_mul_ps(m, _mm_set1_ps(fp16(y[t][b].s))));
    }
    for (int r = 0; r < kDecodeRows; ++r) {
      const __m256i qx = unpack_nibbles(x[r][b].qs);
      for (int t = 0; t < kTokens; ++t) {
        acc[t][r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&scale[t][r]), madd_us(qx, load32(y[t][b].qs)), acc[t][r]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    alignas(16) float min_terms[4];
    _mm_store_ps(min_terms, mins[t]);
    for (int r = 0; r < kDecodeRows; ++r) out[t * kDecodeRows + r] = hsum(acc[t][r]) + min_terms[r];
  }
}

// Runs `pair` (a template over a token count of 1 or 2) on the tokens two at
// a time: out[t * kDecodeRows + r] is row r times token t.
template <class Pair>
inline void by_token_pairs(int n_tokens, const void* const* a, float* out, const Pair& pair) {
  int t = 0;
  for (; t + 2 <= n_tokens; t += 2) pair.template operator()<2>(a + t, out + t * kDecodeRows);
  if (t < n_tokens) pair.template operator()<1>(a + t, out + t * kDecodeRows);
}

template <class Block, __m256i (*values)(const Block&)>
void dot_signed_rows(int64_t n, const void* w, size_t row_stride, const void* const* a, int n_tokens, float* out) {
  const Block* x[kDecodeRows];
  row_pointers(w, row_stride, x);
  by_token_pairs(n_tokens, a, out, [&]<int kTokens>(const void* const* tokens, float* o) {
    dot_signed_rows_tokens<Block, values, kTokens>(n, x, tokens, o);
  });
}

inline void dot_q4_1_rows(int64_t n, const void* w, size_t row_stride, const void* const* a, int n_tokens, float* out) {
  const BlockQ4_1* x[kDecodeRows];
  row_pointers(w, row_stride, x);
  by_token_pairs(n_tokens, a, out, [&]<int kTokens>(const void* const* tokens, float* o) {
    dot_q4_1_rows_tokens<kTokens>(n, x, tokens, o);
  });
}

}  // namespace
}  // namespace tessera::cpu
