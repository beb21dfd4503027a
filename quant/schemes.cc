#include "quant/schemes.h"

#include <cstdint>

#include "engine/core/error.h"

namespace tessera::quant {
namespace {

constexpr int64_t kDefaultA16W4Group = 128;
constexpr int64_t kA16W4FinalLayerGroup = 32;  // quant/schemes.h: why the last layer's groups are finer

nlohmann::json weights_json(const IntQuantConfig& c) {
  return {{"bits", c.bits}, {"group_size", c.group_size}, {"symmetric", c.symmetric}};
}

int64_t integer_field(const nlohmann::json& q, const std::string& p, const char* key) {
  if (!q.contains(key) || !q[key].is_number_integer()) throw Error(p + "." + key + ": must be an integer");
  if (q[key].is_number_unsigned() && q[key].get<uint64_t>() > uint64_t(INT64_MAX)) throw Error(p + "." + key + ": out of range");
  return q[key].get<int64_t>();
}

std::string string_field(const nlohmann::json& q, const std::string& p, const char* key, const char* fallback) {
  if (!q.contains(key) || q[key].is_null()) return fallback;
  if (!q[key].is_string()) throw Error(p + "." + key + ": must be a string");
  return q[key].get<std::string>();
}

bool boolean_field(const nlohmann::json& q, const std::string& p, const char* key, bool fallback) {
  if (!q.contains(key) || q[key].is_null()) return fallback;
  if (!q[key].is_boolean()) throw Error(p + "." + key + ": must be true or false");
  return q[key].get<bool>();
}

IntQuantConfig weights_from_json(const nlohmann::json& j, const std::string& where, ActivationPolicy activation) {
  if (!j.is_object()) throw Error(where + ": must be an object with bits, group_size and symmetric");
  const int64_t bits = integer_field(j, where, "bits"), group = integer_field(j, where, "group_size");
  if (!j.contains("symmetric") || !j["symmetric"].is_boolean()) throw Error(where + ".symmetric: must be true or false");
  if (bits != 8 && bits != 4) throw Error(where + ".bits: " + std::to_string(bits) + " is not supported (8 or 4)");
  if (group < 0 || group % 32 != 0 || group > 4096) {
    throw Error(where + ".group_size: must be 0 (per channel) or a multiple of 32 up to 4096");
  }
  const IntQuantConfig c{int(bits), group, j["symmetric"].get<bool>(), activation};
  if (c.bits == 8 && !c.symmetric) throw Error(where + ": 8-bit weights are symmetric");
  return c;
}

// AutoAWQ's GEMM and AutoGPTQ's 4-bit formats: every decoder linear 4 bits
// per group of inputs; the output head stays in floating point.
SchemeChoice read_published_config(const nlohmann::json& q, const std::string& p, const std::string& method) {
  SchemeChoice s;
  s.name = method;
  s.method = method;
  s.format = method == "awq" ? CheckpointFormat::kAwq : CheckpointFormat::kGptq;
  const int64_t bits = integer_field(q, p, q.contains("w_bit") ? "w_bit" : "bits");
  if (bits != 4) throw Error(p + ".bits: " + std::to_string(bits) + "-bit " + method + " checkpoints are not supported (4)");
  const int64_t group = integer_field(q, p, q.contains("q_group_size") ? "q_group_size" : "group_size");
  if (group != -1 && (group < 32 || group % 32 != 0 || group > 4096)) {
    throw Error(p + ".group_size: " + std::to_string(group) + " is not supported (-1 or a multiple of 32 up to 4096)");
  }
  bool symmetric = true;
  if (s.format == CheckpointFormat::kAwq) {
    const std::string version = string_field(q, p, "version", "gemm");
    if (version != "gemm" && version != "GEMM") throw Error(p + ".version: '" + version + "' packing is not supported (gemm)");
    symmetric = !boolean_field(q, p, "zero_point", true);
  } else {
    symmetric = boolean_field(q, p, "sym", true);
    const std::string format = string_field(q, p, "checkpoint_format", "gptq");
    if (format != "gptq" && format != "gptq_v2") throw Error(p + ".checkpoint_format: '" + format + "' is not supported (gptq, gptq_v2)");
    s.gptq_zero_offset = format == "gptq";
  }
  s.layers = {4, group == -1 ? 0 : group, symmetric, ActivationPolicy::kNone};
  s.output_head = s.value = s.final_layer = s.layers;
  return s;
}

}  // namespace

SchemeChoice scheme_choice(std::string_view name, int64_t group_size) {
  SchemeChoice s;
  s.name = std::string(name);
  const IntQuantConfig per_channel{8, 0, true, ActivationPolicy::kNone};
  if (name == "a16w8" || name == "da8w8") {
    if (group_size != 0) throw Error("scheme " + s.name + ": weights are scaled per output channel (no group size)");
    s.layers = per_channel;
    s.value = s.layers;
    if (name == "da8w8") s.layers.activation = ActivationPolicy::kDynamicInt8Token;
    s.output_head = s.final_layer = s.layers;
    return s;
  }
  if (name == "a16w4") {
    const int64_t g = group_size == 0 ? kDefaultA16W4Group : group_size;
    if (g != 32 && g != 64 && g != 128) throw Error("scheme a16w4: group size must be 32, 64 or 128");
    s.layers = {4, g, false, ActivationPolicy::kNone};
    s.output_head = per_channel;
    s.value = s.final_layer = s.layers;
    s.final_layer.group_size = kA16W4FinalLayerGroup;
    return s;
  }
  throw Error("unknown quantization scheme '" + s.name + "' (a16w8, a16w4, da8w8)");
}

nlohmann::json quantization_config_json(const SchemeChoice& c) {
  const bool int8_acts = c.layers.activation == ActivationPolicy::kDynamicInt8Token;
  return {{"quant_method", "tessera"},
          {"scheme", c.name},
          {"method", c.method},
          {"weights", weights_json(c.layers)},
          {"lm_head", weights_json(c.output_head)},
          {"final_layer", weights_json(c.final_layer)},
          {"activations", int8_acts ? "int8_per_token" : "16bit"},
          {"v_proj_activations", c.value.activation == ActivationPolicy::kDynamicInt8Token ? "int8_per_token" : "16bit"}};
}

std::optional<SchemeChoice> read_quantization_config(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("quantization_config") || config["quantization_config"].is_null()) return std::nullopt;
  const nlohmann::json& q = config["quantization_config"];
  const std::string p = where + ": quantization_config";
  if (!q.is_object()) throw Error(p + ": must be an object");
  const auto text = [&](const char* key) {
    if (!q.contains(key) || !q[key].is_string()) throw Error(p + "." + key + ": must be a string");
    return q[key].get<std::string>();
  };
  const std::string method = text("quant_method");
  if (method == "awq" || method == "gptq") return read_published_config(q, p, method);
  // gpt-oss's MXFP4 experts are found by their NAME_blocks / NAME_scales
  // tensors; every other linear is stored as floats.
  if (method == "mxfp4") return std::nullopt;
  if (method != "tessera") {
    throw Error(p + ".quant_method: '" + method + "' checkpoints are not supported (tessera, awq, gptq, mxfp4)");
  }
  SchemeChoice s;
  s.name = text("scheme");
  s.method = text("method");
  const auto policy_of = [&](const char* key) {
    const std::string acts = text(key);
    if (acts != "16bit" && acts != "int8_per_token") throw Error(p + "." + key + ": '" + acts + "' (16bit, int8_per_token)");
    return acts == "16bit" ? ActivationPolicy::kNone : ActivationPolicy::kDynamicInt8Token;
  };
  const ActivationPolicy policy = policy_of("activations");
  s.layers = weights_from_json(q.value("weights", nlohmann::json()), p + ".weights", policy);
  s.output_head = weights_from_json(q.value("lm_head", nlohmann::json()), p + ".lm_head", policy);
  // Checkpoints written before v_proj_activations or final_layer existed
  // quantize v's activations and the last layer like the rest.
  s.value = s.layers;
  if (q.contains("v_proj_activations")) s.value.activation = policy_of("v_proj_activations");
  s.final_layer = q.contains("final_layer") ? weights_from_json(q["final_layer"], p + ".final_layer", policy) : s.layers;
  for (const IntQuantConfig* c : {&s.layers, &s.final_layer}) {
    if (policy == ActivationPolicy::kDynamicInt8Token && (c->bits != 8 || c->group_size != 0)) {
      throw Error(p + ": int8 activations need 8-bit weights scaled per channel");
    }
  }
  return s;
}

}  // namespace tessera::quant
