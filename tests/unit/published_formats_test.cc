// AutoAWQ and AutoGPTQ checkpoints (tests/data/hf-quant, written by
// scripts/gen_awq_gptq_fixtures.py in the published packings) unpack to
// exactly the weights the formats' definitions give.
#include <gtest/gtest.h>

#include <vector>

#include "engine/core/error.h"
#include "models/safetensors/safetensors_file.h"
#include "quant/dequantize.h"
#include "quant/published_formats.h"
#include "tests/unit/test_files.h"

namespace tessera::quant {
namespace {

std::vector<float> as_f32(const safetensors::File& f, const safetensors::TensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(t.dtype, f.tensor_bytes(t).data(), out.data(), n);
  return out;
}

const int32_t* ints(const safetensors::File& f, const std::string& name) {
  const safetensors::TensorInfo* t = f.find_tensor(name);
  if (!t) return nullptr;
  EXPECT_EQ(t->dtype, DType::kI32) << name;
  return reinterpret_cast<const int32_t*>(f.tensor_bytes(*t).data());
}

void check_directory(const std::string& dir, bool awq) {
  const safetensors::File model = safetensors::File::open(test::data_path("hf-quant/" + dir + "/model.safetensors"));
  const safetensors::File expected = safetensors::File::open(test::data_path("hf-quant/" + dir + "/expected.safetensors"));
  size_t checked = 0;
  bool permuted = false;
  for (const safetensors::TensorInfo& e : expected.tensors()) {
    const std::string prefix = e.name.substr(0, e.name.size() - std::string(".weight").size());
    const int64_t out = e.shape[0], in = e.shape[1];
    const std::vector<float> scales = as_f32(model, *model.find_tensor(prefix + ".scales"));
    const PackedLinear packed{ints(model, prefix + ".qweight"), ints(model, prefix + ".qzeros"), scales.data(),
                              awq ? nullptr : ints(model, prefix + ".g_idx")};
    const UnpackedLinear u = awq ? unpack_awq(e.name, packed, out, in, 32) : unpack_gptq(e.name, packed, out, in, 32, true);
    permuted = permuted || !u.input_order.empty();
    const std::vector<float> want = as_f32(expected, e);
    const QuantizedLinear view = u.matrix.view(e.name);
    std::vector<float> row(static_cast<size_t>(in));
    for (int64_t o = 0; o < out; ++o) {
      dequantize_int_row(view, o, row.data());
      for (int64_t c = 0; c < in; ++c) {
        const int64_t i = u.input_order.empty() ? c : u.input_order[size_t(c)];
        ASSERT_EQ(row[size_t(c)], want[size_t(o * in + i)]) << e.name << " output " << o << " input " << i;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 21u);  // seven linears in each of three layers
  EXPECT_EQ(permuted, dir == "gptq-actorder");
}

TEST(PublishedFormats, AwqGemmUnpacksToTheDefinedWeights) { check_directory("awq", true); }
TEST(PublishedFormats, GptqUnpacksToTheDefinedWeights) { check_directory("gptq", false); }
TEST(PublishedFormats, GptqActOrderRegroupsItsInputs) { check_directory("gptq-actorder", false); }

TEST(PublishedFormats, MalformedPackingIsRefused) {
  std::vector<int32_t> words(64 * 16, 0), g_idx(64, 0);
  std::vector<float> scales(2 * 64, 1.0f);
  const PackedLinear p{words.data(), words.data(), scales.data(), g_idx.data()};
  EXPECT_THROW(unpack_awq("w", p, 60, 64, 32), Error);         // outputs not a multiple of 8
  EXPECT_THROW(unpack_awq("w", p, 64, 64, 48), Error);         // group does not divide the inputs
  EXPECT_THROW(unpack_gptq("w", p, 64, 64, 32, true), Error);  // every input in group 0: groups of unequal size
  g_idx.assign(64, 5);
  EXPECT_THROW(unpack_gptq("w", p, 64, 64, 32, true), Error);  // group index outside
}

}  // namespace
}  // namespace tessera::quant
