#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace tessera::cpu {

void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool) {
  const int pairs = params.rotary_dim / 2;
  const float theta_scale = std::pow(params.freq_base, -2.0f / float(params.rotary_dim));
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    std::vector<float> cos_table(static_cast<size_t>(pairs)), sin_table(static_cast<size_t>(pairs));
    for (int64_t t = begin; t < end; ++t) {
      // Angles advance by repeated multiplication, as ggml computes them.
      float theta = float(positions[t]);
      for (int i = 0; i < pairs; ++i) {
        const float ff = params.freq_factors ? params.freq_factors[i] : 1.0f;
        const float angle = params.freq_scale * (theta / ff);
        cos_table[size_t(i)] = std::cos(angle);
        sin_table[size_t(i)] = std::sin(angle);
        theta *= theta_scale;
      }
      for (int h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        for (int i = 0; i < pairs; ++i) {
          const int a = params.style == RopeStyle::kInterleaved ? 2 * i : i;
          const int b = params.style == RopeStyle::kInterleaved ? 2 * i + 1 : i + pairs;
          // One fused multiply-add per output, as an FMA machine evaluates
          // x0*cos - x1*sin; llama.cpp's results depend on this rounding.
          const float x0 = v[a], x1 = v[b];
          const float c = cos_table[size_t(i)], s = sin_table[size_t(i)];
          v[a] = std::fma(x0, c, -(x1 * s));
          v[b] = std::fma(x0, s, x1 * c);
        }
      }
    }
  });
}

}  // namespace tessera::cpu
