#include <gtest/gtest.h>

#include "engine/tensor/dtype.h"

namespace tessera {
namespace {

TEST(DType, GgufIdsRoundTrip) {
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto d = dtype_from_gguf(id)) {
      EXPECT_EQ(dtype_to_gguf(*d), id) << dtype_name(*d);
    }
  }
  EXPECT_FALSE(dtype_from_gguf(4).has_value());  // removed Q4_2
  EXPECT_FALSE(dtype_from_gguf(1000).has_value());
}

TEST(DType, BlockGeometry) {
  EXPECT_EQ(dtype_bytes(DType::kQ4_0, 64).value(), 36u);
  EXPECT_EQ(dtype_bytes(DType::kQ6_K, 512).value(), 420u);
  EXPECT_EQ(dtype_bytes(DType::kF16, 3).value(), 6u);
  EXPECT_EQ(dtype_bytes(DType::kInt4, 4).value(), 2u);
  EXPECT_FALSE(dtype_bytes(DType::kQ4_K, 100).has_value());  // partial super-block
  EXPECT_FALSE(dtype_bytes(DType::kF32, UINT64_MAX / 2).has_value());  // overflow
}

}  // namespace
}  // namespace tessera
