#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/tensor/aligned_buffer.h"
#include "engine/tensor/tensor.h"

namespace tessera {
namespace {

TEST(TensorView, ContiguousStridesAndSize) {
  AlignedBuffer buf(2 * 3 * 4 * sizeof(float));
  TensorView t(buf.data(), DType::kF32, {2, 3, 4});
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.stride(2), 1);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.shape_string(), "[2, 3, 4]");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % kHostAlignment, 0u);
}

TEST(TensorView, QuantizedRowsSliceByBlocks) {
  AlignedBuffer buf(4 * 18 * 2);
  TensorView t(buf.data(), DType::kQ4_0, {4, 64});
  EXPECT_EQ(t.nbytes(), 4u * 36u);
  const TensorView rows = t.slice_rows(1, 3);
  EXPECT_EQ(rows.dim(0), 2);
  EXPECT_EQ(static_cast<char*>(rows.data()) - static_cast<char*>(t.data()), 36);
  EXPECT_THROW(t.slice_rows(3, 5), Error);
}

TEST(TensorView, RejectsPartialBlocksAndTooManyDims) {
  EXPECT_THROW(TensorView(nullptr, DType::kQ4_K, {2, 100}), Error);
  const int64_t shape[5] = {1, 1, 1, 1, 1};
  EXPECT_THROW(TensorView(nullptr, DType::kF32, shape, 5), Error);
}

}  // namespace
}  // namespace tessera
