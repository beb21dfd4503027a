#include "models/rope_frequencies.h"

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

}  // namespace

std::vector<float> transformers_inv_freq(float base, int dim, const nlohmann::json& rope_scaling) {
  if (!(base > 0.0f)) throw Error("config.json: rope_theta must be positive");
  std::vector<float> inv_freq = default_inv_freq(base, dim);
  if (!rope_scaling.is_object()) return inv_freq;
  const auto type_of = [&](const char* key) {
    return rope_scaling.contains(key) && rope_scaling[key].is_string() ? rope_scaling[key].get<std::string>() : "";
  };
  const std::string type = type_of("rope_type").empty() ? type_of("type") : type_of("rope_type");
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
  throw Error("config.json: rope_scaling type '" + type + "' is not supported");
}

}  // namespace tessera
