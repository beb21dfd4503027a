#pragma once
// The rotation of one token's heads, compiled once per instruction set
// (rope.cc, rope_fma.cc): the same operations in the same order, so every
// build gives the same bits (a fused multiply-add rounds once wherever it
// runs; with FMA it is one instruction instead of a libm call).
#include <cmath>

#include "kernels/op_types.h"

namespace tessera::cpu {
namespace {

// x: [n_heads][head_dim] of one token; cos_table, sin_table: the token's
// angles for the params' rotary pairs.
inline void rotate_token_heads(float* x, int n_heads, int head_dim, const ops::RopeParams& params, const float* cos_table,
                               const float* sin_table) {
  const int pairs = params.rotary_dim / 2;
  const bool interleaved = params.style == ops::RopeStyle::kInterleaved;
  const bool fused = params.numerics == ops::RopeNumerics::kGgml;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int i = 0; i < pairs; ++i) {
      const int a = interleaved ? 2 * i : i;
      const int b = interleaved ? 2 * i + 1 : i + pairs;
      const float x0 = v[a], x1 = v[b];
      const float c = cos_table[i], s = sin_table[i];
      if (fused) {
        // One fused multiply-add per output, as an FMA machine evaluates
        // x0*cos - x1*sin; llama.cpp's results depend on this rounding.
        v[a] = std::fma(x0, c, -(x1 * s));
        v[b] = std::fma(x0, s, x1 * c);
      } else {
        // x*cos + rotate_half(x)*sin, each product rounded, as torch does.
        v[a] = x0 * c + (-x1) * s;
        v[b] = x1 * c + x0 * s;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
