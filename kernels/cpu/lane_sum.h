#pragma once
// Sums in a fixed SIMD lane order: four accumulators of sixteen lanes, fused
// multiply-adds, and a fixed reduction tree. This is the order of a 512-bit
// vector loop (and of llama.cpp's CPU backend on such machines), written so
// any CPU gets the same bits. Attention uses it where rounding would
// otherwise depend on the instruction set.
#include <cmath>

namespace tessera::cpu {

constexpr int kLanes = 16;
constexpr int kAccumulators = 4;
constexpr int kLaneStep = kLanes * kAccumulators;

// The reduction of one 16-lane register: halves, then quarters, then pairs.
inline float reduce_16_lanes(const float* a) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = a[i + 8] + a[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[i + 4] + t3[i];
  const float t8_0 = t6[0] + t6[2];
  const float t8_1 = t6[1] + t6[3];
  return t8_0 + t8_1;
}

// sum_i x[i] * y[i] over n elements.
inline float lane_ordered_dot(const float* x, const float* y, int n) {
  float acc[kAccumulators][kLanes] = {};
  const int whole = n - n % kLaneStep;
  for (int i = 0; i < whole; i += kLaneStep) {
    for (int j = 0; j < kAccumulators; ++j) {
      for (int l = 0; l < kLanes; ++l) acc[j][l] = std::fma(x[i + j * kLanes + l], y[i + j * kLanes + l], acc[j][l]);
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    acc[0][l] = acc[0][l] + acc[2][l];
    acc[1][l] = acc[1][l] + acc[3][l];
  }
  for (int l = 0; l < kLanes; ++l) acc[0][l] = acc[0][l] + acc[1][l];
  double sum = whole > 0 ? double(reduce_16_lanes(acc[0])) : 0.0;
  for (int i = whole; i < n; ++i) sum += double(x[i] * y[i]);
  return float(sum);
}

}  // namespace tessera::cpu
