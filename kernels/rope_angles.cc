#include "kernels/rope_angles.h"

#include <cmath>

namespace tessera::ops {

void rope_angles(const RopeParams& params, int32_t position, float* cos_out, float* sin_out) {
  const int pairs = params.rotary_dim / 2;
  if (params.numerics == RopeNumerics::kFrequencyTable) {
    // transformers: the f32 product of frequency and position, then cos/sin.
    for (int i = 0; i < pairs; ++i) {
      const float angle = params.inv_freq[i] * float(position);
      cos_out[i] = std::cos(angle);
      sin_out[i] = std::sin(angle);
    }
    return;
  }
  // ggml: angles advance by repeated multiplication.
  const float theta_scale = std::pow(params.freq_base, -2.0f / float(params.rotary_dim));
  float theta = float(position);
  for (int i = 0; i < pairs; ++i) {
    const float ff = params.freq_factors ? params.freq_factors[i] : 1.0f;
    const float angle = params.freq_scale * (theta / ff);
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

std::vector<float> rope_table(const RopeParams& params, int32_t positions) {
  const size_t pairs = size_t(params.rotary_dim / 2), n = size_t(positions) * pairs;
  std::vector<float> table(2 * n);
  for (int32_t p = 0; p < positions; ++p) rope_angles(params, p, &table[size_t(p) * pairs], &table[n + size_t(p) * pairs]);
  return table;
}

}  // namespace tessera::ops
