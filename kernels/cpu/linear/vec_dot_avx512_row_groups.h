#pragma once
// AVX-512 kernel for weights in row groups (kernels/cpu/linear/row_groups.h): one
// or two tokens against 16 weight rows. Register i of a row-group block
// holds values 4i..4i+3 of the 16 rows; one VNNI instruction against the
// token's same four values, broadcast, starting from the token's bias, gives
// lane k exactly lane i of the one-row kernel for row k. Each of the eight
// lane positions keeps its own accumulator, walked over the blocks in order
// with the same multiply-add, and the eight are summed at the end in the
// order hsum() sums a row's lanes: the one-row kernel's bits.
// For vec_dot_avx512.cc only.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/linear/row_groups.h"

namespace tessera::cpu {
namespace {

template <int kTokens>
void row_group_tokens(int64_t blocks, const RowGroupBlock* w, const TokenBlock* const* tokens, const float* const* scales,
                      float* out) {
  __m512 acc[kTokens][8];
  for (auto& token : acc) {
    for (__m512& v : token) v = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const RowGroupBlock& x = w[b];
    // The next group (the thread's next tile, most often) is fetched into
    // L2 while this one is multiplied: a few tokens make too little work per
    // byte for the hardware prefetcher alone to keep the stream ahead.
    // A prefetch past the end of the copy is harmless (the address is
    // formed as an integer, never dereferenced).
    const uintptr_t next = reinterpret_cast<uintptr_t>(&x) + uintptr_t(blocks) * sizeof(RowGroupBlock);
    for (uintptr_t line = 0; line < sizeof(RowGroupBlock); line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(next + line), _MM_HINT_T1);
    }
    __m512i q[8];
    for (int i = 0; i < 8; ++i) q[i] = _mm512_load_si512(x.q[i]);
    const __m512 dx = _mm512_load_ps(x.d);
    for (int t = 0; t < kTokens; ++t) {
      const TokenBlock& y = tokens[t][b];
      const __m512 d = _mm512_mul_ps(dx, _mm512_set1_ps(scales[t][b]));
      for (int i = 0; i < 8; ++i) {
        int32_t four;
        std::memcpy(&four, y.qs + 4 * i, sizeof four);
        const __m512i sums = _mm512_dpbusd_epi32(_mm512_set1_epi32(y.bias[i]), q[i], _mm512_set1_epi32(four));
        acc[t][i] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sums), acc[t][i]);
      }
    }
  }
  // hsum's order: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
  for (int t = 0; t < kTokens; ++t) {
    const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][4]), _mm512_add_ps(acc[t][2], acc[t][6]));
    const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[t][1], acc[t][5]), _mm512_add_ps(acc[t][3], acc[t][7]));
    _mm512_storeu_ps(out + t * kGroupRows, _mm512_add_ps(even, odd));
  }
}

inline void row_group_dot(int64_t blocks, const RowGroupBlock* w, const TokenBlock* const* tokens, const float* const* scales,
                          int n_tokens, float* out) {
  if (n_tokens == 2) {
    row_group_tokens<2>(blocks, w, tokens, scales, out);
  } else {
    row_group_tokens<1>(blocks, w, tokens, scales, out);
  }
}

}  // namespace
}  // namespace tessera::cpu
