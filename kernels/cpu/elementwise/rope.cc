#include "kernels/cpu/elementwise/rope.h"

#include <cmath>
#include <array>
#include <string>

#include "engine/core/error.h"
#include "kernels/rope_angles.h"

namespace tessera::cpu {
namespace {

constexpr int kMaxRotaryPairs = 1024;

}  // namespace

void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool) {
  const int pairs = params.rotary_dim / 2;
  if (pairs < 0 || pairs > kMaxRotaryPairs) throw Error("rope: rotary dimension " + std::to_string(params.rotary_dim) + " unsupported");
  const bool fused = params.numerics == ops::RopeNumerics::kGgml;
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    std::array<float, kMaxRotaryPairs> cos_table, sin_table;  // on the stack: no allocation per call
    for (int64_t t = begin; t < end; ++t) {
      ops::rope_angles(params, positions[t], cos_table.data(), sin_table.data());
      for (int h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        for (int i = 0; i < pairs; ++i) {
          const int a = params.style == RopeStyle::kInterleaved ? 2 * i : i;
          const int b = params.style == RopeStyle::kInterleaved ? 2 * i + 1 : i + pairs;
          const float x0 = v[a], x1 = v[b];
          const float c = cos_table[size_t(i)], s = sin_table[size_t(i)];
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
  });
}

}  // namespace tessera::cpu
