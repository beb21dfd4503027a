#pragma once
// Scalar conversions between f32 and the 16-bit float formats. Exact for
// every input (round-to-nearest-even on narrowing, NaN stays NaN).
#include <cstdint>
#include <cstring>

namespace tessera {

inline float bits_to_f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_to_f32(sign);
  // Subnormal half: normalise into an f32 exponent.
  int shift = 0;
  while ((mantissa & 0x400) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ff;
  return bits_to_f32(sign | uint32_t(113 - shift) << 23 | (mantissa << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t bits = f32_to_bits(f);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t abs_bits = bits & 0x7fffffff;
  if (abs_bits >= 0x7f800000) {  // inf or NaN
    return uint16_t(sign | 0x7c00 | (abs_bits > 0x7f800000 ? 0x200 : 0));
  }
  if (abs_bits >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds to inf
  if (abs_bits < 0x38800000) {  // subnormal or zero in half
    const float scaled = bits_to_f32(abs_bits) * 16777216.0f;  // * 2^24: exact
    // Round to nearest even on the integer number of 2^-24 units.
    const float rounded = __builtin_nearbyintf(scaled);
    return uint16_t(sign | uint16_t(rounded));
  }
  const uint32_t mantissa_lsb = (abs_bits >> 13) & 1;
  const uint32_t rounded = abs_bits + 0xfff + mantissa_lsb;
  return uint16_t(sign | ((rounded - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = f32_to_bits(f);
  if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

}  // namespace tessera
