#include "models/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace tessera {
namespace {

std::vector<float> default_inv_freq(float base, int dim) {
  std::vector<float> inv_freq;
  for (int i = 0; i < dim; i += 2) {
    const float exponent = float(i) / float(dim);
    inv_freq.push_back(1.0f / std::pow(base, exponent));
  }
  return inv_freq;
}

float number(const nlohmann::json& scaling, const char* key, double fallback) {
  if (!scaling.contains(key)) return float(fallback);
  if (!scaling[key].is_number()) throw Error(std::string("config.json: rope_scaling.") + key + " must be a number");
  return scaling[key].get<float>();
}

// Long wavelengths divided by `factor`, short ones kept, the band between
// blended, each step an f32 tensor operation in transformers' order.
void apply_llama3(const nlohmann::json& scaling, std::vector<float>& inv_freq) {
  const float factor = number(scaling, "factor", 8.0);
  const double low = number(scaling, "low_freq_factor", 1.0);
  const double high = number(scaling, "high_freq_factor", 4.0);
  const double old_context = number(scaling, "original_max_position_embeddings", 8192.0);
  if (!(factor > 0.0f) || !(high > low) || !(old_context > 0.0)) throw Error("config.json: rope_scaling (llama3) has invalid factors");
  const float low_wavelen = float(old_context / low), high_wavelen = float(old_context / high);
  const float two_pi = float(2.0 * M_PI);
  for (float& f : inv_freq) {
    const float wavelen = two_pi / f;
    float scaled = wavelen > low_wavelen ? f / factor : f;
    const float smooth = (float(old_context) / wavelen - float(low)) / float(high - low);
    const float smoothed = (1.0f - smooth) * scaled / factor + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = medium ? smoothed : scaled;
  }
}

std::string scaling_type(const nlohmann::json& rope_scaling) {
  if (!rope_scaling.is_object()) return "";
  const auto type_of = [&](const char* key) {
    return rope_scaling.contains(key) && rope_scaling[key].is_string() ? rope_scaling[key].get<std::string>() : "";
  };
  return type_of("rope_type").empty() ? type_of("type") : type_of("rope_type");
}

// Pairs below the corrected range keep their frequency, those above are
// divided by the factor, those between blended; each step in float32 as
// transformers' tensors compute it (the range in double, as Python's).
void apply_yarn(const nlohmann::json& scaling, float base, int dim, std::vector<float>& inv_freq) {
  const float factor = number(scaling, "factor", 1.0);
  const double fast = number(scaling, "beta_fast", 32.0), slow = number(scaling, "beta_slow", 1.0);
  if (!scaling.contains("original_max_position_embeddings")) {
    throw Error("config.json: rope_scaling (yarn) needs original_max_position_embeddings");
  }
  const double context = number(scaling, "original_max_position_embeddings", 0.0);
  if (!(factor > 0.0f) || !(context > 0.0)) throw Error("config.json: rope_scaling (yarn) has invalid factors");
  const auto correction_dim = [&](double rotations) {
    return double(dim) * std::log(context / (rotations * 2.0 * M_PI)) / (2.0 * std::log(double(base)));
  };
  double low = correction_dim(fast), high = correction_dim(slow);
  if (scaling.value("truncate", true)) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float ramp = std::clamp((float(i) - float(low)) / float(high - low), 0.0f, 1.0f);
    const float extrapolation = 1.0f - ramp;
    const float position_freq = std::pow(base, float(2 * i) / float(dim));  // as default_inv_freq's denominator
    const float interpolated = 1.0f / (factor * position_freq);
    inv_freq[i] = interpolated * (1.0f - extrapolation) + inv_freq[i] * extrapolation;
  }
}

}  // namespace

float transformers_rope_attention_factor(const nlohmann::json& rope_scaling) {
  if (scaling_type(rope_scaling) != "yarn") return 1.0f;
  if (rope_scaling.contains("attention_factor") && rope_scaling["attention_factor"].is_number()) {
    return rope_scaling["attention_factor"].get<float>();
  }
  const double factor = number(rope_scaling, "factor", 1.0);
  const auto mscale = [&](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  const bool both = rope_scaling.contains("mscale") && rope_scaling.contains("mscale_all_dim") &&
                    rope_scaling["mscale"].is_number() && rope_scaling["mscale_all_dim"].is_number() &&
                    rope_scaling["mscale"].get<double>() != 0.0 && rope_scaling["mscale_all_dim"].get<double>() != 0.0;
  if (both) return float(mscale(rope_scaling["mscale"].get<double>()) / mscale(rope_scaling["mscale_all_dim"].get<double>()));
  return float(mscale(1.0));
}

std::vector<float> transformers_inv_freq(float base, int dim, const nlohmann::json& rope_scaling) {
  if (!(base > 0.0f)) throw Error("config.json: rope_theta must be positive");
  std::vector<float> inv_freq = default_inv_freq(base, dim);
  const std::string type = scaling_type(rope_scaling);
  if (type.empty() || type == "default") return inv_freq;
  if (type == "linear") {
    const float factor = number(rope_scaling, "factor", 1.0);
    if (!(factor > 0.0f)) throw Error("config.json: rope_scaling.factor must be positive");
    for (float& f : inv_freq) f /= factor;
    return inv_freq;
  }
  if (type == "llama3") {
    apply_llama3(rope_scaling, inv_freq);
    return inv_freq;
  }
  if (type == "yarn") {
    apply_yarn(rope_scaling, base, dim, inv_freq);
    return inv_freq;
  }
  throw Error("config.json: rope_scaling type '" + type + "' is not supported");
}

}  // namespace tessera
