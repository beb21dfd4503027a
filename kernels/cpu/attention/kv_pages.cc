#include "kernels/cpu/attention/kv_pages.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "kernels/cpu/attention/hadamard.h"

namespace tessera::cpu {

float quantize_kv_row_int8(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (!(amax > 0.0f) || !std::isfinite(amax)) {
    // A non-finite row has no scale that represents it; zeros keep later
    // attention finite, as a zeroed page does.
    std::memset(q, 0, size_t(n));
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int i = 0; i < n; ++i) q[i] = int8_t(std::lrintf(x[i] * inv));
  return amax / 127.0f;
}

namespace {

void write_int8(const KvWriteArgs& a) {
  if (a.head_dim <= 0 || a.row % a.head_dim != 0 || !a.k_scales || !a.v_scales) {
    throw Error("kv_write: an int8 cache needs its scales and a head size dividing the row");
  }
  const int64_t heads = a.row / a.head_dim;
  const bool rotate = hadamard_applies(a.head_dim);
  std::vector<float> key(size_t(a.head_dim));  // one head's key, centred and rotated
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t slot = a.slots[t];
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t at = t * a.row + h * a.head_dim, to = slot * a.row + h * a.head_dim;
      for (int d = 0; d < a.head_dim; ++d) key[size_t(d)] = a.k[at + d] - (a.k_center ? a.k_center[h * a.head_dim + d] : 0.0f);
      if (rotate) walsh_hadamard(key.data(), a.head_dim);
      a.k_scales[slot * heads + h] = quantize_kv_row_int8(key.data(), a.head_dim, static_cast<int8_t*>(a.k_pages) + to);
      a.v_scales[slot * heads + h] = quantize_kv_row_int8(a.v + at, a.head_dim, static_cast<int8_t*>(a.v_pages) + to);
    }
  }
}

}  // namespace

void write_kv_rows(const KvWriteArgs& a) {
  if (a.dtype == DType::kI8) return write_int8(a);
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const int64_t base = a.slots[t] * a.row;
    const float* k = a.k + t * a.row;
    const float* v = a.v + t * a.row;
    if (a.dtype == DType::kF32) {
      std::memcpy(static_cast<float*>(a.k_pages) + base, k, size_t(a.row) * sizeof(float));
      std::memcpy(static_cast<float*>(a.v_pages) + base, v, size_t(a.row) * sizeof(float));
      continue;
    }
    uint16_t* kd = static_cast<uint16_t*>(a.k_pages) + base;
    uint16_t* vd = static_cast<uint16_t*>(a.v_pages) + base;
    for (int64_t i = 0; i < a.row; ++i) {
      kd[i] = f32_to_f16(k[i]);
      vd[i] = f32_to_f16(v[i]);
    }
  }
}

}  // namespace tessera::cpu
