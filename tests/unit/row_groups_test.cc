// The row-group copy of Q4_0/Q5_0/Q8_0 weights against the reference
// dequantisation at each kernel table's offset, and prompt products
// through it (AVX-512 VNNI and AVX2) against the one-row kernel, bit for bit.
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


// The host's features with AVX-512 turned off: the AVX2 kernel table.
IsaFeatures avx2_only() {
  IsaFeatures isa = detect_isa();
  isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512_vnni = isa.avx512_bf16 = false;
  return isa;
}

bool has_avx2() {
  const IsaFeatures isa = detect_isa();
  return isa.avx2 && isa.fma && isa.f16c;
}

bool has_vnni_row_groups() {
  const IsaFeatures isa = detect_isa();
  return has_avx2() && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni;
}

constexpr DType kFormats[] = {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0};

// Every value of the copy, less its offset and times its scale, is the
// reference dequantisation's; padding rows are zeros.
void expect_values_of_rows(DType dtype, int offset) {
  const int64_t rows = 37, cols = 96;  // three groups, the last padded
  const std::vector<uint8_t> bytes = random_blocks(dtype, rows, cols, 5);
  const auto groups = RowGroups::repack(dtype, bytes.data(), rows, cols, offset);
  ASSERT_TRUE(groups) << dtype_name(dtype) << " at offset " << offset;
  ASSERT_EQ(groups->blocks(), cols / kQK);
  ASSERT_EQ(groups->offset(), offset);
  const size_t row_bytes = *dtype_bytes(dtype, uint64_t(cols));
  std::vector<float> reference(static_cast<size_t>(cols));
  for (int64_t r = 0; r < 48; ++r) {
    if (r < rows) dequantize_row(dtype, bytes.data() + size_t(r) * row_bytes, reference.data(), cols);
    for (int64_t e = 0; e < cols; ++e) {
      const RowGroupBlock& block = groups->group(r / kGroupRows)[e / kQK];
      const int k = int(r % kGroupRows), i = int(e % kQK) / 4, t = int(e % 4);
      const float value = float(int(block.q[i][k * 4 + t]) - offset) * block.d[k];
      ASSERT_EQ(value, r < rows ? reference[size_t(e)] : 0.0f)
          << dtype_name(dtype) << " at offset " << offset << " row " << r << " element " << e;
    }
  }
}

TEST(RowGroups, HoldEveryValueAndScaleOfTheRows) {
  for (const DType dtype : kFormats) expect_values_of_rows(dtype, 128);
  // AVX2's offset, for the formats whose values fit bytes at it.
  expect_values_of_rows(DType::kQ4_0, 16);
  expect_values_of_rows(DType::kQ5_0, 16);
  expect_values_of_rows(DType::kQ4_0, 8);
}

TEST(RowGroups, RefuseFormatsAndOffsetsThatDoNotFitBytes) {
  EXPECT_FALSE(RowGroups::repack(DType::kQ4_1, nullptr, 16, 32, 128));
  EXPECT_FALSE(RowGroups::repack(DType::kQ4_K, nullptr, 16, 256, 128));
  const std::vector<uint8_t> q8 = random_blocks(DType::kQ8_0, 16, 64, 4);
  EXPECT_FALSE(RowGroups::repack(DType::kQ8_0, q8.data(), 16, 64, 16));
  const std::vector<uint8_t> q5 = random_blocks(DType::kQ5_0, 16, 64, 4);
  EXPECT_FALSE(RowGroups::repack(DType::kQ5_0, q5.data(), 16, 64, 8));
  EXPECT_FALSE(RowGroups::repack(DType::kQ5_0, q5.data(), 16, 64, 129));
}

// Prompt products through the row-group copy give the one-row kernel's
// bits for every token and row, whole groups and the padded last one, an
// even and an odd number of tokens.
void expect_prompt_bits(DType dtype, const IsaFeatures& isa, const std::string& table) {
  const int64_t rows = 37, cols = 160;
  const std::vector<uint8_t> bytes = random_blocks(dtype, rows, cols, 9);
  const LinearWeight weight("test.weight", dtype, bytes.data(), rows, cols, isa);
  ASSERT_NE(weight.row_groups(), nullptr) << dtype_name(dtype) << " " << table;
  for (const int64_t tokens : {3, 8, 13}) {
    test_support::expect_one_row_bits(weight, tokens, uint32_t(tokens), std::string(dtype_name(dtype)) + " " + table);
  }
}

TEST(RowGroups, PromptProductsGiveTheOneRowBits) {
  if (!has_vnni_row_groups()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  for (const DType dtype : kFormats) expect_prompt_bits(dtype, detect_isa(), "avx512");
}

TEST(RowGroups, Avx2PromptProductsGiveTheOneRowBits) {
  if (!has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  expect_prompt_bits(DType::kQ4_0, avx2_only(), "avx2");
  expect_prompt_bits(DType::kQ5_0, avx2_only(), "avx2");
  const std::vector<uint8_t> q8 = random_blocks(DType::kQ8_0, 16, 64, 3);
  const LinearWeight q8_weight("test.weight", DType::kQ8_0, q8.data(), 16, 64, avx2_only());
  EXPECT_EQ(q8_weight.row_groups(), nullptr) << "Q8_0 at AVX2's offset does not fit bytes";
}

// Large values: Q5_0 rows at +15 against tokens at +-127 make the largest
// pair sums AVX2's 16-bit multiply-add meets, which must not saturate.
TEST(RowGroups, Avx2ExtremeValuesDoNotSaturate) {
  if (!has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  const int64_t rows = 16, cols = 64;
  std::vector<BlockQ5_0> blocks(size_t(rows * cols / kQK));
  for (BlockQ5_0& b : blocks) {
    b.d = 0x3c00;  // 1.0
    std::memset(b.qs, 0xff, sizeof b.qs);  // every low nibble 15
    std::memset(b.qh, 0xff, sizeof b.qh);  // and the fifth bit: q = 31 - 16 = 15
  }
  const LinearWeight weight("test.weight", DType::kQ5_0, blocks.data(), rows, cols, avx2_only());
  ASSERT_NE(weight.row_groups(), nullptr);
  std::vector<float> x(size_t(4 * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / cols) % 2 ? -1.0f : 1.0f;  // quantise to +-127 exactly
  std::vector<float> y(size_t(4 * rows));
  ThreadPool pool(2);
  MatmulScratch scratch;
  matmul(weight, x.data(), 4, y.data(), scratch, pool);
  std::vector<uint8_t> act(weight.activation_row_bytes());
  for (int64_t m = 0; m < 4; ++m) {
    convert_activation_row(weight.kernel().activation_type, x.data() + m * cols, act.data(), cols);
    const float one_row = weight.kernel().fn(cols, weight.row(0), act.data());
    // 15 · 127 per element at the token's f16 scale of 1/127: about +-15 each.
    EXPECT_NEAR(one_row, (m % 2 ? -15.0f : 15.0f) * float(cols), 0.01f * float(cols));
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(y[size_t(m * rows + r)], one_row) << "token " << m << " row " << r;
  }
}

TEST(RowGroups, NotKeptForWeightsThatSeeFewRows) {
  const std::vector<uint8_t> bytes = random_blocks(DType::kQ8_0, 16, 64, 3);
  const LinearWeight head("output.weight", DType::kQ8_0, bytes.data(), 16, 64, detect_isa(), false);
  EXPECT_EQ(head.row_groups(), nullptr);
}

}  // namespace
}  // namespace tessera::cpu
