#pragma once
// The exponential the CPU kernels use wherever bit-for-bit agreement with
// llama.cpp's CPU backend matters (softmax, SiLU).
#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::cpu {

// e^x by range reduction to x = n ln2 + b and a degree-5 polynomial in b,
// accurate to about 1.5 ulp; the coefficients are those of the widely used
// single-precision vector exp (ARM optimized-routines), which llama.cpp's
// CPU backend uses too.
static inline float vector_expf(float x) {
  const float shift = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, shift);
  const float n = z - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192.0f) return n > 0.0f ? INFINITY : 0.0f;
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                           std::fma(0x1.ffffecp-1f, b, 1.0f));
  // j * 2^n. Multiplying by an exact power of two rounds exactly as ldexp
  // does, without its library call; outside the normal exponents ldexp
  // handles the edge.
  const int e = int(n);
  if (e >= -126 && e <= 127) return j * std::bit_cast<float>(uint32_t(e + 127) << 23);
  return std::ldexp(j, e);
}

}  // namespace tessera::cpu
