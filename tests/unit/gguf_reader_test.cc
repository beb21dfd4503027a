// The GGUF reader against files written by gguf-py (tests/data/gguf, from
// scripts/gen_gguf_fixtures.py) and against the real models when present.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "quant/dequantize.h"
#include "models/gguf/gguf_file.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

class AllTypesFile : public ::testing::Test {
 protected:
  gguf::File file = gguf::File::open(test::data_path("gguf/all_types.gguf"));
};

TEST_F(AllTypesFile, HeaderAndAlignment) {
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.data_offset() % 64, 0u);
  EXPECT_EQ(file.get_string("general.architecture").value(), "testarch");
}

TEST_F(AllTypesFile, EveryScalarType) {
  EXPECT_EQ(file.find("t.u8")->type, gguf::ValueType::kUint8);
  EXPECT_EQ(file.get_uint("t.u8").value(), 200u);
  EXPECT_EQ(file.find("t.i8")->as_int().value(), -100);
  EXPECT_EQ(file.get_uint("t.u16").value(), 60000u);
  EXPECT_EQ(file.find("t.i16")->as_int().value(), -30000);
  EXPECT_EQ(file.get_uint("t.u32").value(), 4000000000u);
  EXPECT_EQ(file.find("t.i32")->as_int().value(), -2000000000);
  EXPECT_EQ(file.get_float("t.f32").value(), 0.15625);
  EXPECT_EQ(file.get_uint("t.u64").value(), 18000000000000000000ull);
  EXPECT_EQ(file.find("t.i64")->as_int().value(), -9000000000000000000ll);
  EXPECT_EQ(file.get_float("t.f64").value(), -2.5e-300);
  EXPECT_EQ(file.get_bool("t.true").value(), true);
  EXPECT_EQ(file.get_bool("t.false").value(), false);
  EXPECT_EQ(file.get_string("t.str").value(), "h\xc3\xa9llo, \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\xa6\x99");
}

TEST_F(AllTypesFile, Arrays) {
  const gguf::Array* ints = file.get_array("t.arr_i32");
  ASSERT_NE(ints, nullptr);
  EXPECT_EQ(ints->element_type, gguf::ValueType::kInt32);
  ASSERT_EQ(ints->items.size(), 3u);
  EXPECT_EQ(ints->items[1].as_int().value(), -2);
  const gguf::Array* strings = file.get_array("t.arr_str");
  ASSERT_EQ(strings->items.size(), 3u);
  EXPECT_EQ(*strings->items[1].as_string(), "bc");
  EXPECT_EQ(*strings->items[2].as_string(), "");
  const gguf::Array* nested = file.get_array("t.arr_nested");
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].as_array()->items[1].as_int().value(), 2);
}

TEST_F(AllTypesFile, TypeMismatchIsAClearError) {
  try {
    file.get_string("t.u8");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'t.u8'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected string"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(file.get_string("no.such.key").has_value());
}

TEST_F(AllTypesFile, TensorDataMatchesWhatGgufPyWrote) {
  const auto expected = nlohmann::json::parse(test::read_file(test::data_path("gguf/all_types.expected.json")));
  ASSERT_EQ(file.tensors().size(), 3u);
  for (const auto& [name, values] : expected.items()) {
    const gguf::TensorInfo* t = file.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->n_elems, values.size()) << name;
    std::vector<float> got(t->n_elems);
    dequantize_row(t->dtype, file.tensor_bytes(*t).data(), got.data(), int64_t(got.size()));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], values[i].get<float>()) << name << "[" << i << "]";
  }
  const gguf::TensorInfo* f32 = file.find_tensor("f32_tensor");
  ASSERT_EQ(f32->shape.size(), 2u);
  EXPECT_EQ(f32->shape[0], 5);  // GGUF lists the contiguous dimension first
  EXPECT_EQ(f32->shape[1], 3);
}

TEST(GgufFile, ParsesCallerOwnedBytes) {
  const std::vector<uint8_t> bytes = test::read_bytes(test::data_path("gguf/all_types.gguf"));
  const gguf::File file = gguf::File::parse(bytes, "in-memory");
  EXPECT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensor_bytes(file.tensors()[0]).data() - bytes.data(), int64_t(file.data_offset() + file.tensors()[0].offset));
}

TEST(GgufFile, VersionTwoHasTheSameLayout) {
  std::vector<uint8_t> bytes = test::read_bytes(test::data_path("gguf/all_types.gguf"));
  bytes[4] = 2;  // the version field follows the magic
  const gguf::File file = gguf::File::parse(bytes, "v2");
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(file.get_uint("t.u32").value(), 4000000000u);
  EXPECT_EQ(file.tensors().size(), 3u);
}

TEST(GgufFile, MissingFileNamesPath) {
  try {
    gguf::File::open("/nonexistent/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

TEST(RealModels, SmolLm2AndGemma3Open) {
  const std::string smol = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  const std::string gemma = test::model_dir() + "/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(smol) || !std::filesystem::exists(gemma)) {
    GTEST_SKIP() << "real models not fetched (scripts/fetch-models.sh)";
  }
  const gguf::File s = gguf::File::open(smol);
  EXPECT_EQ(s.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(s.get_uint("llama.block_count").value(), 30u);
  EXPECT_EQ(s.tensors().size(), 272u);
  const gguf::File g = gguf::File::open(gemma);
  EXPECT_EQ(g.get_string("general.architecture").value(), "gemma3");
  EXPECT_EQ(g.get_uint("gemma3.block_count").value(), 18u);
  EXPECT_NE(g.find_tensor("token_embd.weight"), nullptr);
}

}  // namespace
}  // namespace tessera
