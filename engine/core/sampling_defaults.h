#pragma once
// Sampling values a request gets for the fields it leaves out. A model's
// files may recommend some (generation_config.json, GGUF general.sampling.*),
// its config entry may set or override them key by key, and OpenAI's own
// defaults fill the rest (temperature 1, top_p 1, no top_k or min_p, no
// repetition penalty).
#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

// 0.7 rather than 0.700000, for messages.
inline std::string sampling_value_text(double v) {
  std::string s = std::to_string(v);
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

struct SamplingDefaults {
  std::optional<double> temperature;         // [0, 2]
  std::optional<double> top_p;               // (0, 1]
  std::optional<int64_t> top_k;              // 0: every token
  std::optional<double> min_p;               // [0, 1]
  std::optional<double> repetition_penalty;  // [0.01, 10]

  bool empty() const { return !temperature && !top_p && !top_k && !min_p && !repetition_penalty; }

  // These values with each one `over` sets taken from it instead.
  SamplingDefaults overridden_by(const SamplingDefaults& over) const {
    SamplingDefaults out = *this;
    if (over.temperature) out.temperature = over.temperature;
    if (over.top_p) out.top_p = over.top_p;
    if (over.top_k) out.top_k = over.top_k;
    if (over.min_p) out.min_p = over.min_p;
    if (over.repetition_penalty) out.repetition_penalty = over.repetition_penalty;
    return out;
  }

  // "temperature 0.7, top_k 20": the keys set, for logs; "none" when empty.
  std::string describe() const {
    std::string out;
    const auto add = [&out](const char* key, const std::string& value) {
      out += (out.empty() ? "" : ", ") + std::string(key) + " " + value;
    };
    if (temperature) add("temperature", sampling_value_text(*temperature));
    if (top_p) add("top_p", sampling_value_text(*top_p));
    if (top_k) add("top_k", std::to_string(*top_k));
    if (min_p) add("min_p", sampling_value_text(*min_p));
    if (repetition_penalty) add("repetition_penalty", sampling_value_text(*repetition_penalty));
    return out.empty() ? "none" : out;
  }

  bool operator==(const SamplingDefaults&) const = default;
};

}  // namespace tessera
