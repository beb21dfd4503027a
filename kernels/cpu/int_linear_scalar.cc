// Portable integer-linear kernels: the fallback on CPUs without AVX2.
#include <algorithm>

#include "kernels/cpu/int_linear.h"

namespace tessera::cpu {
namespace {

int unsigned_nibble(const uint8_t* w, int64_t c) {
  const uint8_t byte = w[(c / 64) * 32 + (c % 64) % 32];
  return (c % 64) < 32 ? byte & 0x0F : byte >> 4;
}

template <int Bits>
void a16_row(const IntRowLayout& l, const IntRowTask& t) {
  for (int k = 0; k < t.n_tokens; ++k) {
    const int16_t* x = static_cast<const int16_t*>(t.x) + k * t.x_stride;
    float acc = 0.0f;
    for (int64_t s = 0; s < l.n_spans; ++s) {
      const int64_t begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
      int64_t sum = 0;
      for (int64_t c = begin; c < end; ++c) {
        const int w = Bits == 8 ? int(int8_t(t.w[c])) : unsigned_nibble(t.w, c) - t.zeros[s];
        sum += int64_t(w) * x[c];
      }
      acc += float(sum) * t.scales[s];
    }
    t.y[k * t.y_stride] = acc * t.x_scales[k];
  }
}

void a8_w8_row(const IntRowLayout& l, const IntRowTask& t) {
  for (int k = 0; k < t.n_tokens; ++k) {
    const int8_t* x = static_cast<const int8_t*>(t.x) + k * t.x_stride;
    int32_t sum = 0;
    for (int64_t c = 0; c < l.padded_cols; ++c) sum += int32_t(int8_t(t.w[c])) * x[c];
    t.y[k * t.y_stride] = float(sum) * (t.x_scales[k] * t.scales[0]);
  }
}

}  // namespace

IntLinearKernels scalar_int_kernels() { return {a16_row<8>, a16_row<4>, a8_w8_row, false}; }

}  // namespace tessera::cpu
