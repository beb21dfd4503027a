// The named schemes and their quantization_config: what each scheme gives
// each kind of linear, and that config.json reads back as written.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "quant/schemes.h"

namespace tessera::quant {
namespace {

std::optional<SchemeChoice> reread(const SchemeChoice& c) {
  return read_quantization_config({{"quantization_config", quantization_config_json(c)}}, "config.json");
}

void expect_same(const IntQuantConfig& a, const IntQuantConfig& b) {
  EXPECT_EQ(a.bits, b.bits);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.symmetric, b.symmetric);
  EXPECT_EQ(a.activation, b.activation);
}

TEST(QuantSchemes, Da8w8KeepsTheValueProjectionsActivationsAt16Bits) {
  const SchemeChoice c = scheme_choice("da8w8");
  EXPECT_EQ(c.layers.activation, ActivationPolicy::kDynamicInt8Token);
  EXPECT_EQ(c.output_head.activation, ActivationPolicy::kDynamicInt8Token);
  EXPECT_EQ(c.value.activation, ActivationPolicy::kNone);
  EXPECT_EQ(c.value.bits, 8);
  EXPECT_EQ(c.value.group_size, 0);
}

TEST(QuantSchemes, A16SchemesGiveTheValueProjectionTheLayersConfig) {
  for (const char* name : {"a16w8", "a16w4"}) {
    const SchemeChoice c = scheme_choice(name);
    expect_same(c.value, c.layers);
  }
}

TEST(QuantSchemes, ConfigReadsBackAsWritten) {
  for (const char* name : {"a16w8", "a16w4", "da8w8"}) {
    const SchemeChoice c = scheme_choice(name);
    const auto back = reread(c);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(back->name, c.name);
    expect_same(back->layers, c.layers);
    expect_same(back->output_head, c.output_head);
    expect_same(back->value, c.value);
    expect_same(back->final_layer, c.final_layer);
  }
}

TEST(QuantSchemes, A16w4GivesTheLastLayerGroupsOf32AtFourBits) {
  for (int64_t group : {0, 32, 64, 128}) {
    const SchemeChoice c = scheme_choice("a16w4", group);
    EXPECT_EQ(c.final_layer.bits, 4);
    EXPECT_FALSE(c.final_layer.symmetric);
    EXPECT_EQ(c.final_layer.group_size, 32) << group;
    EXPECT_EQ(c.layers.group_size, group == 0 ? 128 : group);
  }
  for (const char* name : {"a16w8", "da8w8"}) {
    const SchemeChoice c = scheme_choice(name);
    expect_same(c.final_layer, c.layers);
  }
}

TEST(QuantSchemes, ConfigsWithoutAFinalLayerQuantizeItLikeTheLayers) {
  nlohmann::json q = quantization_config_json(scheme_choice("a16w4"));
  q.erase("final_layer");
  const auto back = read_quantization_config({{"quantization_config", q}}, "config.json");
  ASSERT_TRUE(back.has_value());
  expect_same(back->final_layer, back->layers);
}

TEST(QuantSchemes, BadFinalLayerConfigsAreNamed) {
  nlohmann::json q = quantization_config_json(scheme_choice("a16w4"));
  q["final_layer"]["group_size"] = 48;
  try {
    read_quantization_config({{"quantization_config", q}}, "config.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("final_layer.group_size"), std::string::npos) << e.what();
  }
  q["final_layer"] = "4 bits";
  EXPECT_THROW(read_quantization_config({{"quantization_config", q}}, "config.json"), Error);
  // int8 activations need 8-bit per-channel weights in the last layer too.
  nlohmann::json d = quantization_config_json(scheme_choice("da8w8"));
  d["final_layer"] = {{"bits", 4}, {"group_size", 32}, {"symmetric", false}};
  EXPECT_THROW(read_quantization_config({{"quantization_config", d}}, "config.json"), Error);
}

TEST(QuantSchemes, ConfigsWithoutValueActivationsQuantizeVLikeTheLayers) {
  nlohmann::json q = quantization_config_json(scheme_choice("da8w8"));
  q.erase("v_proj_activations");
  const auto back = read_quantization_config({{"quantization_config", q}}, "config.json");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->value.activation, ActivationPolicy::kDynamicInt8Token);
}

TEST(QuantSchemes, BadValueActivationsAreNamed) {
  nlohmann::json q = quantization_config_json(scheme_choice("da8w8"));
  q["v_proj_activations"] = "int4";
  try {
    read_quantization_config({{"quantization_config", q}}, "config.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v_proj_activations"), std::string::npos) << e.what();
  }
  q["v_proj_activations"] = 16;
  EXPECT_THROW(read_quantization_config({{"quantization_config", q}}, "config.json"), Error);
}

}  // namespace
}  // namespace tessera::quant
