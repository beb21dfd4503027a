#include <gtest/gtest.h>

#include "engine/core/checked_math.h"

namespace tessera {
namespace {

TEST(CheckedMath, DetectsOverflow) {
  EXPECT_EQ(checked_add(1, 2).value(), 3u);
  EXPECT_FALSE(checked_add(UINT64_MAX, 1).has_value());
  EXPECT_EQ(checked_mul(1ull << 31, 1ull << 31).value(), 1ull << 62);
  EXPECT_FALSE(checked_mul(1ull << 32, 1ull << 32).has_value());
  EXPECT_EQ(checked_align_up(33, 32).value(), 64u);
  EXPECT_EQ(checked_align_up(64, 32).value(), 64u);
  EXPECT_FALSE(checked_align_up(UINT64_MAX - 3, 32).has_value());
}

TEST(CheckedMath, PowerOfTwo) {
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_TRUE(is_power_of_two(1ull << 20));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(96));
}

}  // namespace
}  // namespace tessera
