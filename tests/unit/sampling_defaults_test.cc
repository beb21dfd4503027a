// Sampling defaults: what a checkpoint recommends (generation_config.json,
// GGUF general.sampling.*), what a config sets, and how they combine.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "engine/core/error.h"
#include "models/model_sampling_defaults.h"

namespace tessera {
namespace {

TEST(SamplingDefaults, GenerationConfigValuesAreRead) {
  const auto d = sampling_defaults_from_generation_config(
      nlohmann::json::parse(R"({"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                                "repetition_penalty": 1.05, "min_p": null, "eos_token_id": [1, 2]})"),
      "m/generation_config.json");
  EXPECT_TRUE(d.dropped.empty());
  EXPECT_EQ(d.values.temperature, 0.7);
  EXPECT_EQ(d.values.top_p, 0.8);
  EXPECT_EQ(d.values.top_k, 20);
  EXPECT_FALSE(d.values.min_p.has_value());  // null: not given
  EXPECT_EQ(d.values.repetition_penalty, 1.05);
  EXPECT_EQ(d.values.describe(), "temperature 0.7, top_p 0.8, top_k 20, repetition_penalty 1.05");
}

TEST(SamplingDefaults, UnusableValuesAreLeftOutAndSaid) {
  const auto d = sampling_defaults_from_generation_config(
      nlohmann::json::parse(R"({"temperature": 3, "top_p": 0, "top_k": "many", "min_p": 0.05, "repetition_penalty": -1})"),
      "m/generation_config.json");
  EXPECT_FALSE(d.values.temperature || d.values.top_p || d.values.top_k || d.values.repetition_penalty);
  EXPECT_EQ(d.values.min_p, 0.05);
  ASSERT_EQ(d.dropped.size(), 4u);
  EXPECT_EQ(d.dropped[0], "m/generation_config.json: temperature 3 is outside [0, 2]");
  EXPECT_EQ(d.dropped[1], "m/generation_config.json: top_p 0 is outside (0, 1]");
  EXPECT_EQ(d.dropped[2], "m/generation_config.json: top_k is not an integer");
  EXPECT_EQ(d.dropped[3], "m/generation_config.json: repetition_penalty -1 is outside [0.01, 10]");
  // A negative top_k turns it off, as transformers and llama.cpp read it.
  EXPECT_EQ(sampling_defaults_from_generation_config(nlohmann::json::parse(R"({"top_k": -1})"), "m").values.top_k, 0);
}

// A metadata-only GGUF v3 file: keys with f32 or i32 values.
class GgufWithKeys {
 public:
  explicit GgufWithKeys(const std::string& name) : path_(std::filesystem::temp_directory_path() / name) {}
  ~GgufWithKeys() { std::filesystem::remove(path_); }
  GgufWithKeys& f32(const std::string& key, float v) { return kv(key, 6, &v, 4); }
  GgufWithKeys& i32(const std::string& key, int32_t v) { return kv(key, 5, &v, 4); }
  std::string write() {
    std::ofstream out(path_, std::ios::binary);
    out.write("GGUF", 4);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, 0);  // tensors
    put<uint64_t>(out, n_);
    out.write(body_.data(), std::streamsize(body_.size()));
    return path_.string();
  }

 private:
  template <typename T>
  static void put(std::ostream& out, T v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }
  GgufWithKeys& kv(const std::string& key, uint32_t type, const void* value, size_t bytes) {
    const uint64_t len = key.size();
    body_.append(reinterpret_cast<const char*>(&len), 8).append(key);
    body_.append(reinterpret_cast<const char*>(&type), 4).append(static_cast<const char*>(value), bytes);
    ++n_;
    return *this;
  }
  std::filesystem::path path_;
  std::string body_;
  uint64_t n_ = 0;
};

TEST(SamplingDefaults, GgufKeysAreRead) {
  GgufWithKeys file("sampling_defaults_test.gguf");
  file.f32("general.sampling.temp", 0.25f).f32("general.sampling.top_p", 0.5f).i32("general.sampling.top_k", 64);
  file.f32("general.sampling.min_p", 2.0f).f32("general.sampling.penalty_repeat", 1.5f);
  const auto d = sampling_defaults_from_gguf(gguf::File::open(file.write()));
  EXPECT_EQ(d.values.temperature, 0.25);
  EXPECT_EQ(d.values.top_p, 0.5);
  EXPECT_EQ(d.values.top_k, 64);
  EXPECT_FALSE(d.values.min_p.has_value());
  EXPECT_EQ(d.values.repetition_penalty, 1.5);
  ASSERT_EQ(d.dropped.size(), 1u);
  EXPECT_NE(d.dropped[0].find("general.sampling.min_p 2 is outside [0, 1]"), std::string::npos) << d.dropped[0];
}

TEST(SamplingDefaults, TheConfigOverridesKeyByKey) {
  SamplingDefaults model;
  model.temperature = 0.7;
  model.top_k = 20;
  SamplingDefaults config;
  config.temperature = 0.2;
  config.min_p = 0.1;
  const SamplingDefaults both = model.overridden_by(config);
  EXPECT_EQ(both.temperature, 0.2);
  EXPECT_EQ(both.top_k, 20);
  EXPECT_EQ(both.min_p, 0.1);
  EXPECT_FALSE(both.top_p.has_value());
  EXPECT_EQ(SamplingDefaults{}.describe(), "none");
}

TEST(SamplingDefaults, ConfigKeysParseWithTheirRanges) {
  const Config c = parse_config(R"(
models:
  - name: m
    path: /models/m.gguf
    sampling_defaults: {from_model: false, temperature: 0.6, top_p: 0.95, top_k: 40, min_p: 0.05, repetition_penalty: 1.1}
)", "test.yaml");
  const ModelConfig& m = c.models.at(0);
  EXPECT_FALSE(m.sampling_defaults_from_model);
  EXPECT_EQ(m.sampling_defaults.describe(), "temperature 0.6, top_p 0.95, top_k 40, min_p 0.05, repetition_penalty 1.1");
  // Written for the workers and read back, the same values.
  const Config back = parse_config(models_to_json(c), "json");
  EXPECT_EQ(back.models.at(0).sampling_defaults.describe(), m.sampling_defaults.describe());
  EXPECT_FALSE(back.models.at(0).sampling_defaults_from_model);
  for (const char* bad : {"{temperature: 2.5}", "{top_p: 0}", "{top_k: -3}", "{min_p: 1.5}", "{seed: 3}"}) {
    const std::string yaml = std::string("models:\n  - name: m\n    path: /m.gguf\n    sampling_defaults: ") + bad + "\n";
    try {
      parse_config(yaml, "test.yaml");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sampling_defaults"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
