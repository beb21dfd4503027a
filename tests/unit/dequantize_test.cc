// Dequantisation must be bit-identical to gguf-py's reference (goldens
// produced by scripts/gen_dequant_goldens.py).
#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "quant/dequantize.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct Golden {
  std::vector<uint8_t> blocks;
  std::vector<float> expected;
};

Golden load_golden(const std::string& type) {
  Golden g;
  g.blocks = test::read_bytes(test::data_path("dequant/" + type + ".bin"));
  const std::vector<uint8_t> ref = test::read_bytes(test::data_path("dequant/" + type + ".f32"));
  g.expected.resize(ref.size() / 4);
  std::memcpy(g.expected.data(), ref.data(), ref.size());
  return g;
}

DType dtype_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto d = dtype_from_gguf(id); d && dtype_name(*d) == name) return *d;
  }
  throw std::runtime_error("no dtype " + name);
}

class DequantizeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DequantizeGolden, BitIdenticalToGgufPy) {
  const Golden g = load_golden(GetParam());
  const DType dtype = dtype_named(GetParam());
  ASSERT_EQ(dtype_bytes(dtype, g.expected.size()).value(), g.blocks.size());
  std::vector<float> got(g.expected.size(), -1.0f);
  dequantize_row(dtype, g.blocks.data(), got.data(), int64_t(got.size()));
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (f32_to_bits(got[i]) != f32_to_bits(g.expected[i])) {
      if (++mismatches <= 5) ADD_FAILURE() << GetParam() << " element " << i << ": got " << got[i] << ", want " << g.expected[i];
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(DequantizeGolden, BackendKernelMatchesReference) {
  const Golden g = load_golden(GetParam());
  const DType dtype = dtype_named(GetParam());
  cpu::CpuBackend backend;
  ASSERT_TRUE(backend.supports(Op::kDequantize, dtype));
  std::vector<float> got(g.expected.size());
  backend.kernels().dequantize({g.blocks.data(), dtype, got.data(), int64_t(got.size())}, backend.default_stream());
  EXPECT_EQ(0, std::memcmp(got.data(), g.expected.data(), got.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantizeGolden,
                         ::testing::Values("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                           "Q4_K", "Q5_K", "Q6_K", "MXFP4"));

TEST(Dequantize, RejectsPartialBlock) {
  std::vector<uint8_t> block(18);
  std::vector<float> out(32);
  EXPECT_THROW(dequantize_row(DType::kQ4_0, block.data(), out.data(), 31), Error);
}

TEST(Dequantize, UnsupportedTypeNamesIt) {
  std::vector<uint8_t> block(66);
  std::vector<float> out(256);
  try {
    dequantize_row(DType::kIQ2_XXS, block.data(), out.data(), 256);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(can_dequantize(DType::kIQ2_XXS));
}

}  // namespace
}  // namespace tessera
