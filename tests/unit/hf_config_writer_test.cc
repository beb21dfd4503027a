// The config.json writers of the architectures (used to write a GGUF model
// as a Hugging Face directory): what they write reads back to the same spec,
// and what config.json cannot state here is refused.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "models/architecture.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

DecoderSpec spec_of(const nlohmann::json& config) {
  DecoderSpec spec;
  find_architecture_for_hf(config.value("model_type", "")).spec_from_hf(config, &spec);
  return spec;
}

class HfConfigWriter : public ::testing::TestWithParam<const char*> {};

TEST_P(HfConfigWriter, WrittenConfigReadsBackToTheSameSpec) {
  const nlohmann::json original = nlohmann::json::parse(test::read_file(test::data_path(std::string("hf-tiny/") + GetParam() + "/config.json")));
  const Architecture& arch = find_architecture_for_hf(original["model_type"].get<std::string>());
  ASSERT_NE(arch.hf_config_from_spec, nullptr);
  const DecoderSpec want = spec_of(original);
  const nlohmann::json written = arch.hf_config_from_spec(want);
  EXPECT_NO_THROW(refuse_unhonoured_hf_flags(written, want));
  const DecoderSpec got = spec_of(written);
  EXPECT_EQ(got.architecture, want.architecture);
  EXPECT_EQ(got.n_layers, want.n_layers);
  EXPECT_EQ(got.d_model, want.d_model);
  EXPECT_EQ(got.ffn_dim, want.ffn_dim);
  EXPECT_EQ(got.n_heads, want.n_heads);
  EXPECT_EQ(got.n_kv_heads, want.n_kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.vocab_size, want.vocab_size);
  EXPECT_EQ(got.max_context, want.max_context);
  EXPECT_EQ(got.norm_eps, want.norm_eps);
  EXPECT_EQ(got.rope.base, want.rope.base);
  EXPECT_EQ(got.rope.dim, want.rope.dim);
  EXPECT_EQ(got.rope.inv_freq, want.rope.inv_freq);
  EXPECT_EQ(got.qkv_bias, want.qkv_bias);
  EXPECT_EQ(got.o_bias, want.o_bias);
  EXPECT_EQ(got.mlp_bias, want.mlp_bias);
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings);
  EXPECT_EQ(got.sliding_window, want.sliding_window);
  // Decimal fields are written as the shortest text that reads back.
  EXPECT_EQ(written["rms_norm_eps"].dump(), original["rms_norm_eps"].dump());
}

INSTANTIATE_TEST_SUITE_P(Architectures, HfConfigWriter, ::testing::Values("llama", "mistral", "qwen2"));

TEST(HfConfigWriter, RefusesWhatConfigJsonCannotStateHere) {
  const nlohmann::json llama = nlohmann::json::parse(test::read_file(test::data_path("hf-tiny/llama/config.json")));
  const Architecture& arch = find_architecture_for_hf("llama");
  DecoderSpec spec = spec_of(llama);
  spec.rope.freq_factors.assign(size_t(spec.rope.dim / 2), 2.0f);
  EXPECT_THROW(arch.hf_config_from_spec(spec), Error);
  spec = spec_of(llama);
  spec.qkv_bias = true;  // without o's bias
  EXPECT_THROW(arch.hf_config_from_spec(spec), Error);
  spec = spec_of(llama);
  spec.sliding_window[1] = 64;
  EXPECT_THROW(arch.hf_config_from_spec(spec), Error);
  EXPECT_EQ(find_architecture_for_hf("gemma3").hf_config_from_spec, nullptr);
  // rope_scaling read from a config.json lives in inv_freq only: not silently dropped.
  const nlohmann::json scaled = nlohmann::json::parse(test::read_file(test::data_path("hf-tiny/llama-bias/config.json")));
  EXPECT_THROW(arch.hf_config_from_spec(spec_of(scaled)), Error);
}

TEST(HfConfigWriter, LinearRopeScalingIsWrittenAsAFactor) {
  DecoderSpec spec = spec_of(nlohmann::json::parse(test::read_file(test::data_path("hf-tiny/llama/config.json"))));
  spec.rope.freq_scale = 0.25f;
  const nlohmann::json written = find_architecture_for_hf("llama").hf_config_from_spec(spec);
  EXPECT_EQ(written["rope_scaling"]["rope_type"], "linear");
  EXPECT_EQ(written["rope_scaling"]["factor"].get<double>(), 4.0);
}

}  // namespace
}  // namespace tessera
