#include "kernels/cpu/linear/quantize_rows.h"

#include <cmath>
#include <cstring>

#include "engine/tensor/half.h"

namespace tessera::cpu {
namespace {

// Round half to even for |v| < 2^22, the way ggml's nearest_int does.
int nearest_int(float v) {
  float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Four running extremes side by side in a vector (GCC/Clang vector
// extensions: SSE on any x86-64); NaNs are passed over. n: a multiple of 4.
using Lanes = float __attribute__((vector_size(16)));
constexpr int kLanes = 4;

Lanes load_lanes(const float* x) {
  Lanes v;
  std::memcpy(&v, x, sizeof v);
  return v;
}

float block_amax(const float* x, int n) {
  Lanes lanes = {};
  for (int j = 0; j < n; j += kLanes) {
    const Lanes v = load_lanes(x + j);
    const Lanes magnitude = v < 0 ? -v : v;
    lanes = magnitude > lanes ? magnitude : lanes;
  }
  float amax = 0.0f;
  for (int l = 0; l < kLanes; ++l) amax = lanes[l] > amax ? lanes[l] : amax;
  return amax;
}

// The signed value of the block's first element of largest magnitude
// (0 if there is none). NaNs are passed over.
float first_signed_amax(const float* x, int n) {
  Lanes highs = {}, lows = {};
  for (int j = 0; j < n; j += kLanes) {
    const Lanes v = load_lanes(x + j);
    highs = v > highs ? v : highs;
    lows = v < lows ? v : lows;
  }
  float high = 0.0f, low = 0.0f;
  for (int l = 0; l < kLanes; ++l) {
    high = highs[l] > high ? highs[l] : high;
    low = lows[l] < low ? lows[l] : low;
  }
  if (high > -low) return high;
  if (-low > high) return low;
  for (int j = 0; j < n; ++j) {  // +a and −a both occur: whichever comes first
    if (x[j] == high || x[j] == low) return x[j];
  }
  return 0.0f;
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float amax = block_amax(x, kQK);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) y[b].qs[j] = int8_t(std::nearbyintf(x[j] * id));
  }
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float amax = block_amax(x, kQK);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[b].qs[j] = int8_t(std::nearbyintf(x[j] * id));
      sum += y[b].qs[j];
    }
    y[b].d = f32_to_f16(d);
    y[b].s = f32_to_f16(d * float(sum));
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    const float max = first_signed_amax(x, kQK_K);
    if (max == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) y[b].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[g * 16 + j];
      y[b].bsums[g] = int16_t(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

void convert_row_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void convert_row_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

}  // namespace tessera::cpu
