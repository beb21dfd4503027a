// Hugging Face's MXFP4 form (value 2k in byte k's low nibble, 2k + 1 in its
// high one; value = E2M1(code) * 2^(exponent - 127), as transformers'
// dequantizer reads it) repacked into GGUF blocks must dequantize, through
// the reference dequantizer checked against gguf-py, to the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/dequantize.h"
#include "quant/mxfp4_repack.h"

namespace tessera {
namespace {

constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

TEST(Mxfp4Repack, HuggingFaceBlocksDequantizeToTheirValues) {
  constexpr int64_t kBlocks = 5;
  std::mt19937 rng(11);
  std::vector<uint8_t> packed(kBlocks * kQK / 2), exponents(kBlocks);
  for (uint8_t& b : packed) b = uint8_t(rng());
  for (int64_t b = 0; b < kBlocks; ++b) exponents[size_t(b)] = uint8_t(120 + 3 * b);  // 2^-7 .. 2^5
  std::vector<BlockMXFP4> blocks(kBlocks);
  quant::hf_mxfp4_row_to_blocks(packed.data(), exponents.data(), kBlocks, blocks.data());
  std::vector<float> values(kBlocks * kQK);
  dequantize_row(DType::kMXFP4, blocks.data(), values.data(), kBlocks * kQK);
  for (int64_t b = 0; b < kBlocks; ++b) {
    for (int k = 0; k < kQK / 2; ++k) {
      const uint8_t byte = packed[size_t(b * kQK / 2 + k)];
      const float scale = std::ldexp(1.0f, int(exponents[size_t(b)]) - 127);
      EXPECT_EQ(values[size_t(b * kQK + 2 * k)], kE2M1[byte & 0x0f] * scale) << "block " << b << " value " << 2 * k;
      EXPECT_EQ(values[size_t(b * kQK + 2 * k + 1)], kE2M1[byte >> 4] * scale) << "block " << b << " value " << 2 * k + 1;
    }
  }
}

}  // namespace
}  // namespace tessera
