// RoPE against transformers' rotary embedding (tests/data/rope, written by
// scripts/gen_rope_goldens.py): Hugging Face checkpoints rotate with the
// frequency-table recipe, which follows transformers' float32 arithmetic;
// ggml's recipe (right for GGUF files) drifts from it as positions grow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/cpu/elementwise/rope.h"
#include "models/rope_frequencies.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct RopeCase {
  int n = 0, dim = 0;
  float theta = 0.0f;
  std::vector<int32_t> positions;
  std::vector<float> x, rotated;  // (n, dim)
};

RopeCase read_case(const std::string& name) {
  const std::vector<uint8_t> bytes = test::read_bytes(test::data_path("rope/" + name + ".bin"));
  RopeCase c;
  size_t at = 0;
  auto take = [&](void* dst, size_t n) {
    EXPECT_LE(at + n, bytes.size());
    std::memcpy(dst, bytes.data() + at, n);
    at += n;
  };
  take(&c.n, 4);
  take(&c.dim, 4);
  take(&c.theta, 4);
  c.positions.resize(size_t(c.n));
  c.x.resize(size_t(c.n) * size_t(c.dim));
  c.rotated.resize(c.x.size());
  take(c.positions.data(), c.positions.size() * 4);
  take(c.x.data(), c.x.size() * 4);
  take(c.rotated.data(), c.rotated.size() * 4);
  return c;
}

std::vector<float> rotated(const RopeCase& c, const ops::RopeParams& params, const cpu::IsaFeatures& isa) {
  std::vector<float> y = c.x;
  cpu::ThreadPool pool(1);
  cpu::apply_rope(y.data(), c.positions.data(), c.n, 1, c.dim, params, pool, isa);
  return y;
}

float max_error(const RopeCase& c, const ops::RopeParams& params) {
  const std::vector<float> y = rotated(c, params, cpu::detect_isa());
  float worst = 0.0f;
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - c.rotated[i]));
  return worst;
}

class RopeVsTransformers : public ::testing::TestWithParam<std::string> {};

TEST_P(RopeVsTransformers, FrequencyTableRecipeMatches) {
  const RopeCase c = read_case(GetParam());
  const auto expected = nlohmann::json::parse(test::read_file(test::data_path("rope/expected.json")));
  const std::vector<float> inv_freq = transformers_inv_freq(c.theta, c.dim, expected["cases"][GetParam()]["rope_scaling"]);
  ops::RopeParams table;
  table.style = ops::RopeStyle::kHalves;
  table.numerics = ops::RopeNumerics::kFrequencyTable;
  table.rotary_dim = c.dim;
  table.inv_freq = inv_freq.data();
  // Values are O(1). torch's vectorised pow is an ulp off correct rounding
  // for a frequency now and then (base 1e6, pair 37), and an ulp of a
  // frequency times a position of 3e4 moves the angle by ~1e-6 rad.
  EXPECT_LT(max_error(c, table), 1e-5f) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Cases, RopeVsTransformers, ::testing::Values("base1e6", "base1e4", "llama3", "linear"));

TEST(RopeVsTransformers, GgmlRecipeDriftsWhereTheTableDoesNot) {
  const RopeCase c = read_case("base1e6");
  ops::RopeParams ggml;
  ggml.style = ops::RopeStyle::kHalves;
  ggml.numerics = ops::RopeNumerics::kGgml;
  ggml.rotary_dim = c.dim;
  ggml.freq_base = c.theta;
  const std::vector<float> inv_freq = transformers_inv_freq(c.theta, c.dim, nullptr);
  ops::RopeParams table = ggml;
  table.numerics = ops::RopeNumerics::kFrequencyTable;
  table.inv_freq = inv_freq.data();
  const float ggml_error = max_error(c, ggml), table_error = max_error(c, table);
  std::printf("max |error| at positions up to 32k: ggml recipe %.3g, frequency table %.3g\n", ggml_error, table_error);
  EXPECT_GT(ggml_error, 10.0f * table_error);
}

// The FMA build and the portable one (libm's fma) round alike, for both
// recipes: the kernel's choice of build never changes a bit.
TEST(Rope, EveryBuildGivesTheSameBits) {
  const RopeCase c = read_case("base1e4");
  const std::vector<float> inv_freq = transformers_inv_freq(c.theta, c.dim, nullptr);
  ops::RopeParams ggml;
  ggml.style = ops::RopeStyle::kHalves;
  ggml.numerics = ops::RopeNumerics::kGgml;
  ggml.rotary_dim = c.dim;
  ggml.freq_base = c.theta;
  ops::RopeParams table = ggml;
  table.numerics = ops::RopeNumerics::kFrequencyTable;
  table.inv_freq = inv_freq.data();
  ops::RopeParams interleaved = ggml;
  interleaved.style = ops::RopeStyle::kInterleaved;
  const cpu::IsaFeatures portable{};
  for (const ops::RopeParams& params : {ggml, table, interleaved}) {
    const std::vector<float> a = rotated(c, params, portable), b = rotated(c, params, cpu::detect_isa());
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
    EXPECT_NE(0, std::memcmp(a.data(), c.x.data(), a.size() * sizeof(float)));  // it did rotate
  }
}

}  // namespace
}  // namespace tessera
