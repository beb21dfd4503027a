// The row-group copy of Q4_0/Q5_0/Q8_0 weights against the reference
// dequantisation, and prompt products through it against the one-row
// kernel, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/cpu/linear/matmul.h"
#include "kernels/cpu/linear/row_groups.h"
#include "quant/dequantize.h"
#include "tests/unit/one_row_bits.h"

namespace tessera::cpu {
namespace {

// `rows` rows of `cols` elements of `dtype`: random bytes, each block's
// scale a random f16 in [2^-8, 2^-6), Q8_0 values kept to [-127, 127] as
// GGUF quantisers write them.
std::vector<uint8_t> random_blocks(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  const DTypeInfo& info = dtype_info(dtype);
  std::vector<uint8_t> bytes(*dtype_bytes(dtype, uint64_t(rows * cols)));
  std::mt19937 rng(seed);
  for (uint8_t& b : bytes) b = uint8_t(rng());
  for (size_t at = 0; at < bytes.size(); at += info.block_bytes) {
    const uint16_t scale = uint16_t(0x1c00 | (rng() & 0x7ff));
    std::memcpy(&bytes[at], &scale, sizeof scale);
    if (dtype == DType::kQ8_0) {
      for (size_t i = 2; i < info.block_bytes; ++i) {
        if (bytes[at + i] == 0x80) bytes[at + i] = 0x81;
      }
    }
  }
  return bytes;
}


bool has_row_group_kernel() {
  const IsaFeatures isa = detect_isa();
  return isa.avx2 && isa.fma && isa.f16c && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni;
}

constexpr DType kFormats[] = {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0};

TEST(RowGroups, HoldEveryValueAndScaleOfTheRows) {
  const int64_t rows = 37, cols = 96;  // three groups, the last padded
  for (const DType dtype : kFormats) {
    const std::vector<uint8_t> bytes = random_blocks(dtype, rows, cols, 5);
    const auto groups = RowGroups::repack(dtype, bytes.data(), rows, cols);
    ASSERT_TRUE(groups) << dtype_name(dtype);
    ASSERT_EQ(groups->blocks(), cols / kQK);
    const size_t row_bytes = *dtype_bytes(dtype, uint64_t(cols));
    std::vector<float> reference(static_cast<size_t>(cols));
    for (int64_t r = 0; r < 48; ++r) {
      if (r < rows) dequantize_row(dtype, bytes.data() + size_t(r) * row_bytes, reference.data(), cols);
      for (int64_t e = 0; e < cols; ++e) {
        const RowGroupBlock& block = groups->group(r / kGroupRows)[e / kQK];
        const int k = int(r % kGroupRows), i = int(e % kQK) / 4, t = int(e % 4);
        const float value = float(int(block.q[i][k * 4 + t]) - 128) * block.d[k];
        ASSERT_EQ(value, r < rows ? reference[size_t(e)] : 0.0f) << dtype_name(dtype) << " row " << r << " element " << e;
      }
    }
  }
  EXPECT_FALSE(RowGroups::repack(DType::kQ4_1, nullptr, 16, 32));
  EXPECT_FALSE(RowGroups::repack(DType::kQ4_K, nullptr, 16, 256));
}

// Prompt products through the row-group copy give the one-row kernel's
// bits for every token and row, whole groups and the padded last one, an
// even and an odd number of tokens.
TEST(RowGroups, PromptProductsGiveTheOneRowBits) {
  if (!has_row_group_kernel()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  const int64_t rows = 37, cols = 160;
  for (const DType dtype : kFormats) {
    const std::vector<uint8_t> bytes = random_blocks(dtype, rows, cols, 9);
    const LinearWeight weight("test.weight", dtype, bytes.data(), rows, cols, detect_isa());
    ASSERT_NE(weight.row_groups(), nullptr) << dtype_name(dtype);
    for (const int64_t tokens : {8, 13}) test_support::expect_one_row_bits(weight, tokens, uint32_t(tokens), std::string(dtype_name(dtype)));
  }
}

TEST(RowGroups, NotKeptForWeightsThatSeeFewRows) {
  const std::vector<uint8_t> bytes = random_blocks(DType::kQ8_0, 16, 64, 3);
  const LinearWeight head("output.weight", DType::kQ8_0, bytes.data(), 16, 64, detect_isa(), false);
  EXPECT_EQ(head.row_groups(), nullptr);
}

}  // namespace
}  // namespace tessera::cpu
