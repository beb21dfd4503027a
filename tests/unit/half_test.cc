#include <gtest/gtest.h>

#include <cmath>

#include "engine/tensor/half.h"

namespace tessera {
namespace {

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = f16_to_f32(uint16_t(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), bits) << std::hex << bits;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
}

TEST(Half, NarrowingRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next f16; ties go to even (1).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(70000.0f), 0x7c00);  // overflow to infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);  // underflow to zero
}

TEST(BFloat16, RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808000)), 0x3f80);  // tie to even
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f818000)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

}  // namespace
}  // namespace tessera
