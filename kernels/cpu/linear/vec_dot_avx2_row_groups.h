#pragma once
// AVX2 kernel for Q4_0 and Q5_0 weights in row groups (kernels/cpu/linear/row_groups.h),
// stored as q + 16: one or two tokens against 16 weight rows, eight rows
// at a time. Half h of chunk i holds values 4i..4i+3 of rows 8h..8h+7; one
// multiply-add of unsigned by signed bytes against the token's same four
// values (broadcast), a multiply-add of the pairs by ones and the token's
// bias give lane k exactly lane i of the one-row kernel for row k, with no
// sign instructions and no unpacking (the one-row kernel spends both on
// every row and token). (q + 16) · y stays below 31 · 127 · 2, so the
// 16-bit pairs never saturate. Each lane position keeps its own
// accumulator, walked over the blocks in order with the same multiply-add,
// and the eight are summed in hsum()'s order: the one-row kernel's bits.
// Eight accumulators fill half the registers, so a token goes through the
// group's two halves in turn, re-reading the group (about 0.6 KB a block)
// from L1 or L2.
// For vec_dot_avx2.cc only.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/linear/row_groups.h"

namespace tessera::cpu {
namespace {

constexpr int kAvx2RowGroupOffset = 16;

// Four bytes from memory in every 32-bit lane. The float broadcast is a
// load alone on AMD cores, where the integer one also takes a shuffle
// unit, which the multiply-adds need.
inline __m256i broadcast32(const void* p) { return _mm256_castps_si256(_mm256_broadcast_ss(static_cast<const float*>(p))); }

// Rows [8 half, 8 half + 8) of one group times one token: out[k] is row 8 half + k.
inline void row_group_half(int64_t blocks, const RowGroupBlock* w, int half, const TokenBlock* y, const float* scales,
                           float* out) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < blocks; ++b) {
    const RowGroupBlock& x = w[b];
    const __m256 d = _mm256_mul_ps(_mm256_load_ps(x.d + 8 * half), _mm256_broadcast_ss(scales + b));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.q[i] + 32 * half));
      const __m256i pairs = _mm256_maddubs_epi16(q, broadcast32(y[b].qs + 4 * i));
      const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(pairs, ones), broadcast32(&y[b].bias[i]));
      acc[i] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums), acc[i]);
    }
  }
  // hsum's order: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
  const __m256 even = _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6]));
  const __m256 odd = _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7]));
  _mm256_storeu_ps(out, _mm256_add_ps(even, odd));
}

inline void row_group_dot_avx2(int64_t blocks, const RowGroupBlock* w, const TokenBlock* const* tokens,
                               const float* const* scales, int n_tokens, float* out) {
  for (int t = 0; t < n_tokens; ++t) {
    for (int half = 0; half < 2; ++half) row_group_half(blocks, w, half, tokens[t], scales[t], out + t * kGroupRows + 8 * half);
  }
}

}  // namespace
}  // namespace tessera::cpu
