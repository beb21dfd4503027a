#include "models/model_sampling_defaults.h"

#include <algorithm>
#include <cmath>

namespace tessera {
namespace {

// What a request may ask for (server/serving/generation_request.cc).
struct Range {
  double lo, hi;
  bool lo_open = false;
  bool holds(double v) const { return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi; }
  std::string text() const { return (lo_open ? "(" : "[") + sampling_value_text(lo) + ", " + sampling_value_text(hi) + "]"; }
};
constexpr Range kTemperature{0.0, 2.0}, kTopP{0.0, 1.0, true}, kMinP{0.0, 1.0}, kRepetition{0.01, 10.0};
constexpr int64_t kMaxTopK = int64_t(1) << 30;

// Each reader hands every candidate value here, with where it came from.
class Collector {
 public:
  explicit Collector(std::string where) : where_(std::move(where)) {}

  void number(const std::string& key, std::optional<double> v, const Range& range, std::optional<double>* out) {
    if (!v) return refuse(key, "is not a number");
    if (!range.holds(*v)) return refuse(key, sampling_value_text(*v) + " is outside " + range.text());
    *out = *v;
  }
  // top_k: 0 or less turns it off, as in both sources.
  void top_k(const std::string& key, std::optional<int64_t> v) {
    if (!v) return refuse(key, "is not an integer");
    if (*v > kMaxTopK) return refuse(key, std::to_string(*v) + " is over " + std::to_string(kMaxTopK));
    result_.values.top_k = std::max<int64_t>(*v, 0);
  }
  SamplingDefaults& values() { return result_.values; }
  ModelSamplingDefaults take() { return std::move(result_); }

 private:
  void refuse(const std::string& key, const std::string& why) { result_.dropped.push_back(where_ + ": " + key + " " + why); }
  std::string where_;
  ModelSamplingDefaults result_;
};

std::optional<double> json_number(const nlohmann::json& v) {
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

std::optional<int64_t> json_integer(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) return v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v.get<uint64_t>());
  return std::nullopt;
}

}  // namespace

ModelSamplingDefaults sampling_defaults_from_generation_config(const nlohmann::json& config, const std::string& where) {
  Collector c(where);
  if (!config.is_object()) return c.take();
  SamplingDefaults& s = c.values();
  // Keys set to null mean "not given", as transformers reads them.
  const auto given = [&config](const char* key) { return config.contains(key) && !config[key].is_null(); };
  if (given("temperature")) c.number("temperature", json_number(config["temperature"]), kTemperature, &s.temperature);
  if (given("top_p")) c.number("top_p", json_number(config["top_p"]), kTopP, &s.top_p);
  if (given("top_k")) c.top_k("top_k", json_integer(config["top_k"]));
  if (given("min_p")) c.number("min_p", json_number(config["min_p"]), kMinP, &s.min_p);
  if (given("repetition_penalty")) {
    c.number("repetition_penalty", json_number(config["repetition_penalty"]), kRepetition, &s.repetition_penalty);
  }
  return c.take();
}

ModelSamplingDefaults sampling_defaults_from_gguf(const gguf::File& file) {
  Collector c(file.name());
  SamplingDefaults& s = c.values();
  const auto number = [&](const char* key, const Range& range, std::optional<double>* out) {
    if (const gguf::Value* v = file.find(key)) c.number(key, v->as_float(), range, out);
  };
  number("general.sampling.temp", kTemperature, &s.temperature);
  number("general.sampling.top_p", kTopP, &s.top_p);
  if (const gguf::Value* v = file.find("general.sampling.top_k")) c.top_k("general.sampling.top_k", v->as_int());
  number("general.sampling.min_p", kMinP, &s.min_p);
  number("general.sampling.penalty_repeat", kRepetition, &s.repetition_penalty);
  return c.take();
}

}  // namespace tessera
