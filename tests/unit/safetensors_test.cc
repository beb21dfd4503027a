// Safetensors files and Hugging Face directories written by the `safetensors`
// library (scripts/gen_hf_fixtures.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "quant/dequantize.h"
#include "models/hf/hf_model_dir.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

nlohmann::json expected() { return nlohmann::json::parse(test::read_file(test::data_path("hf/expected.json"))); }

TEST(SafetensorsFile, OpensAShardAndReadsMetadata) {
  const auto file = safetensors::File::open(test::data_path("hf/tiny-sharded/model-00001-of-00002.safetensors"));
  EXPECT_EQ(file.metadata().at("format"), "pt");
  ASSERT_EQ(file.tensors().size(), 2u);
  const safetensors::TensorInfo* up = file.find_tensor("model.layers.0.mlp.up_proj.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->dtype, DType::kF16);
  EXPECT_EQ(up->shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(file.tensor_bytes(*up).size(), 48u);
}

TEST(HfModelDir, ShardedWeightsMatchWhatSafetensorsWrote) {
  const hf::ModelDir dir = hf::ModelDir::open(test::data_path("hf/tiny-sharded"));
  EXPECT_EQ(dir.config()["model_type"], "llama");
  ASSERT_TRUE(dir.generation_config().has_value());
  EXPECT_EQ((*dir.generation_config())["eos_token_id"], 2);
  EXPECT_TRUE(dir.tokenizer_json().has_value());
  EXPECT_EQ(dir.shards().size(), 2u);
  EXPECT_EQ(dir.weight_count(), 4u);
  const nlohmann::json all = expected();
  for (const auto& [name, want] : all["tensors"].items()) {
    const auto ref = dir.find_weight(name);
    ASSERT_TRUE(ref.has_value()) << name;
    EXPECT_EQ(ref->tensor->shape, want["shape"].get<std::vector<int64_t>>()) << name;
    const auto bytes = ref->file->tensor_bytes(*ref->tensor);
    const auto values = want["values"].get<std::vector<float>>();
    std::vector<float> got(values.size());
    dequantize_row(ref->tensor->dtype, bytes.data(), got.data(), int64_t(got.size()));
    EXPECT_EQ(got, values) << name;
  }
  EXPECT_FALSE(dir.find_weight("no.such.weight").has_value());
}

class TempModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tessera-hf-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::filesystem::copy(test::data_path("hf/tiny-sharded"), dir_, std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string open_error() {
    try {
      hf::ModelDir::open(dir_.string());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(TempModelDir, ShardNameCannotLeaveTheDirectory) {
  write("model.safetensors.index.json", R"({"weight_map": {"w": "../../etc/passwd"}})");
  EXPECT_NE(open_error().find("is not a plain file name"), std::string::npos);
}

TEST_F(TempModelDir, TensorMissingFromItsShard) {
  write("model.safetensors.index.json", R"({"weight_map": {"ghost": "model-00001-of-00002.safetensors"}})");
  EXPECT_NE(open_error().find("tensor 'ghost' is not in its shard"), std::string::npos);
}

TEST_F(TempModelDir, BadConfigJsonNamesTheFile) {
  write("config.json", "{ not json");
  const std::string error = open_error();
  EXPECT_NE(error.find("config.json"), std::string::npos) << error;
  EXPECT_NE(error.find("not valid JSON"), std::string::npos) << error;
}

TEST_F(TempModelDir, MissingWeights) {
  std::filesystem::remove(dir_ / "model.safetensors.index.json");
  EXPECT_NE(open_error().find("no model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace tessera
