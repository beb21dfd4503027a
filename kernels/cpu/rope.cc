#include "kernels/cpu/rope.h"

#include <cmath>
#include <array>
#include <string>

#include "engine/error.h"

namespace tessera::cpu {
namespace {

constexpr int kMaxRotaryPairs = 1024;

// The angles of one position: cos_table[i], sin_table[i] for each pair.
void rope_angles(const RopeParams& params, int32_t position, float* cos_table, float* sin_table) {
  const int pairs = params.rotary_dim / 2;
  if (params.numerics == ops::RopeNumerics::kFrequencyTable) {
    // transformers: the f32 product of frequency and position, then cos/sin.
    for (int i = 0; i < pairs; ++i) {
      const float angle = params.inv_freq[i] * float(position);
      cos_table[i] = std::cos(angle);
      sin_table[i] = std::sin(angle);
    }
    return;
  }
  // ggml: angles advance by repeated multiplication.
  const float theta_scale = std::pow(params.freq_base, -2.0f / float(params.rotary_dim));
  float theta = float(position);
  for (int i = 0; i < pairs; ++i) {
    const float ff = params.freq_factors ? params.freq_factors[i] : 1.0f;
    const float angle = params.freq_scale * (theta / ff);
    cos_table[i] = std::cos(angle);
    sin_table[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

}  // namespace

void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool) {
  const int pairs = params.rotary_dim / 2;
  if (pairs < 0 || pairs > kMaxRotaryPairs) throw Error("rope: rotary dimension " + std::to_string(params.rotary_dim) + " unsupported");
  const bool fused = params.numerics == ops::RopeNumerics::kGgml;
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    std::array<float, kMaxRotaryPairs> cos_table, sin_table;  // on the stack: no allocation per call
    for (int64_t t = begin; t < end; ++t) {
      rope_angles(params, positions[t], cos_table.data(), sin_table.data());
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
