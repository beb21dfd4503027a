#include "kernels/rope_angles.h"

#include <algorithm>
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
      if (params.attn_factor != 1.0f) cos_out[i] *= params.attn_factor, sin_out[i] *= params.attn_factor;
    }
    return;
  }
  // ggml: angles advance by repeated multiplication.
  const float theta_scale = std::pow(params.freq_base, -2.0f / float(params.rotary_dim));
  const bool yarn = params.ext_factor != 0.0f;
  const float mscale = yarn ? params.attn_factor * (1.0f + 0.1f * std::log(1.0f / params.freq_scale)) : params.attn_factor;
  float theta = float(position);
  for (int i = 0; i < pairs; ++i) {
    const float ff = params.freq_factors ? params.freq_factors[i] : 1.0f;
    const float extrapolated = theta / ff, interpolated = params.freq_scale * extrapolated;
    float angle = interpolated;
    if (yarn) {
      // The ramp is 1 below corr_low (pairs kept unscaled), 0 above corr_high.
      const float y = (float(i) - params.corr_low) / std::max(0.001f, params.corr_high - params.corr_low);
      const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * params.ext_factor;
      angle = interpolated * (1.0f - mix) + extrapolated * mix;
    }
    cos_out[i] = std::cos(angle) * mscale;
    sin_out[i] = std::sin(angle) * mscale;
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
