// Portable integer-linear kernels: the fallback on CPUs without AVX2.
#include <algorithm>

#include "kernels/cpu/linear/int_linear.h"

namespace tessera::cpu {
namespace {

int unsigned_nibble(const uint8_t* w, int64_t c) {
  const uint8_t byte = w[(c / 64) * 32 + (c % 64) % 32];
  return (c % 64) < 32 ? byte & 0x0F : byte >> 4;
}

template <int Bits>
void a16_rows(const IntRowLayout& l, const IntRowTask& t) {
  for (int r = 0; r < t.n_rows; ++r) {
    const uint8_t* w = t.w + size_t(r) * t.w_stride;
    const float* scales = t.scales + r * l.n_spans;
    const int16_t* zeros = t.zeros ? t.zeros + r * l.n_spans : nullptr;
    for (int k = 0; k < t.n_tokens; ++k) {
      const int16_t* x = static_cast<const int16_t*>(t.x) + k * t.x_stride;
      float acc = 0.0f;
      for (int64_t s = 0; s < l.n_spans; ++s) {
        const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
        int64_t sum = 0;
        for (int64_t c = begin; c < end; ++c) {
          const int v = Bits == 8 ? int(int8_t(w[c])) : unsigned_nibble(w, c) - zeros[s];
          sum += int64_t(v) * x[c];
        }
        acc += float(sum) * scales[s];
      }
      t.y[k * t.y_stride + r] = acc * t.x_scales[k];
    }
  }
}

void a8_w8_rows(const IntRowLayout& l, const IntRowTask& t) {
  for (int r = 0; r < t.n_rows; ++r) {
    const uint8_t* w = t.w + size_t(r) * t.w_stride;
    for (int k = 0; k < t.n_tokens; ++k) {
      const int8_t* x = static_cast<const int8_t*>(t.x) + k * t.x_stride;
      int32_t sum = 0;
      for (int64_t c = 0; c < l.padded_cols; ++c) sum += int32_t(int8_t(w[c])) * x[c];
      t.y[k * t.y_stride + r] = float(sum) * (t.x_scales[k] * t.scales[r * l.n_spans]);
    }
  }
}

}  // namespace

IntLinearKernels scalar_int_kernels() { return {a16_rows<8>, a16_rows<4>, a8_w8_rows, false}; }

}  // namespace tessera::cpu
