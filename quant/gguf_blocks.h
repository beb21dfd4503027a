#pragma once
// Memory layouts of the GGUF block formats every backend computes with,
// and of the 8-bit activation blocks they are multiplied against.
#include <cmath>
#include <cstring>
#include <cstdint>

namespace tessera {

constexpr int kQK = 32;     // elements per block of the 32-element formats
constexpr int kQK_K = 256;  // elements per k-quant super-block

struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d, m;  // f16 scale and minimum
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // fifth bits, little-endian
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
// Activation block for Q4_1/Q5_1 weights: s = d * sum(qs), for the minimum term.
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[kQK];
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // eight 6-bit scales and mins
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
// Activation block for k-quant weights; bsums are sums of 16-element groups.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// The eight 6-bit scales and mins of a Q4_K super-block, unpacked.
inline void unpack_q4k_scales(const uint8_t* s, uint8_t* scales, uint8_t* mins) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = s[j] & 0x3f;
    mins[j] = s[j + 4] & 0x3f;
    scales[j + 4] = (s[j + 8] & 0x0f) | ((s[j] >> 2) & 0x30);
    mins[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 2) & 0x30);
  }
}

// MXFP4: one E8M0 exponent, then 32 E2M1 values as nibbles, the low ones
// first (values 0-15), then the high ones (16-31), like Q4_0's.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

// E2M1's eight magnitudes and their negatives, doubled to integers; the
// scale is halved to match (e8m0_half).
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of the E8M0 scale 2^(e - 127): 2^(e - 128), exact (a subnormal for
// e < 2), built from its bits: a library ldexp per block cost the dot
// products more than their arithmetic.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e >= 2 ? uint32_t(e - 1) << 23 : uint32_t(0x00200000) << e;  // 2^-128 = 2^21 * 2^-149
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace tessera
