#include "server/openai/generation_fields.h"

#include <charconv>

namespace tessera {
namespace {

std::vector<std::pair<int32_t, float>> read_logit_bias(RequestFields& f, int32_t vocab_size) {
  std::vector<std::pair<int32_t, float>> bias;
  const Json* v = f.raw("logit_bias");
  if (!v) return bias;
  if (!v->is_object()) throw ApiError::invalid("'logit_bias' must map token ids to numbers", "logit_bias");
  if (v->size() > 1024) throw ApiError::invalid("'logit_bias' has more than 1024 entries", "logit_bias");
  for (const auto& [key, value] : v->items()) {
    int64_t id = -1;
    const auto r = std::from_chars(key.data(), key.data() + key.size(), id);
    if (r.ec != std::errc() || r.ptr != key.data() + key.size() || id < 0 || id >= vocab_size) {
      throw ApiError::invalid("'logit_bias' key '" + key + "' is not a token id of this model (0 to " +
                                  std::to_string(vocab_size - 1) + ")", "logit_bias");
    }
    if (!value.is_number() || value.get<double>() < -100.0 || value.get<double>() > 100.0) {
      throw ApiError::invalid("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
    }
    bias.emplace_back(int32_t(id), float(value.get<double>()));
  }
  return bias;
}

}  // namespace

GenerationParams read_generation_fields(RequestFields& f, const ServedModel& model, const ApiLimits& limits) {
  GenerationParams p;
  SamplingParams& s = p.sampling;
  s.temperature = float(f.number("temperature", 0.0, 2.0).value_or(1.0));
  s.top_p = float(f.number("top_p", 0.0, 1.0).value_or(1.0));
  if (s.top_p <= 0.0f) throw ApiError::invalid("'top_p' must be greater than 0", "top_p");
  const int64_t top_k = f.integer("top_k", -1, 1 << 30).value_or(0);
  s.top_k = top_k < 0 ? 0 : int(top_k);
  s.min_p = float(f.number("min_p", 0.0, 1.0).value_or(0.0));
  s.presence_penalty = float(f.number("presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty = float(f.number("frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.repetition_penalty = float(f.number("repetition_penalty", 0.01, 10.0).value_or(1.0));
  if (auto seed = f.integer("seed", INT64_MIN, INT64_MAX)) s.seed = uint64_t(*seed);
  s.logit_bias = read_logit_bias(f, int32_t(model.tokenizer().vocab().size()));
  p.n = int(f.integer("n", 1, limits.max_n).value_or(1));
  p.stop = f.strings("stop", size_t(limits.max_stop_strings));
  for (const std::string& stop : p.stop) {
    if (stop.empty()) throw ApiError::invalid("'stop' strings must not be empty", "stop");
    if (stop.size() > 1024) throw ApiError::invalid("'stop' strings must be at most 1024 bytes", "stop");
  }
  if (const Json* ids = f.raw("stop_token_ids")) {
    if (!ids->is_array() || ids->size() > size_t(limits.max_stop_strings)) {
      throw ApiError::invalid("'stop_token_ids' must be an array of at most " + std::to_string(limits.max_stop_strings) +
                                  " token ids", "stop_token_ids");
    }
    for (const auto& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(model.tokenizer().vocab().size())) {
        throw ApiError::invalid("'stop_token_ids' entries must be token ids of this model", "stop_token_ids");
      }
      p.stop_token_ids.push_back(int32_t(id.get<int64_t>()));
    }
  }
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  p.priority = int(f.integer("priority", -1000000, 1000000).value_or(0));
  f.ignore("user");
  if (auto best_of = f.integer("best_of", 1, limits.max_n); best_of && *best_of != p.n) {
    throw ApiError::invalid("'best_of' other than n is not supported", "best_of");
  }
  return p;
}

std::vector<int32_t> read_token_ids(const Json& array, const ServedModel& model, const std::string& param) {
  const int64_t vocab = int64_t(model.tokenizer().vocab().size());
  if (!array.is_array()) throw ApiError::invalid("'" + param + "' must be an array of token ids", param);
  std::vector<int32_t> ids;
  for (const auto& t : array) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
      throw ApiError::invalid("'" + param + "' token ids must be integers between 0 and " + std::to_string(vocab - 1), param);
    }
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  return ids;
}

int resolve_max_tokens(std::optional<int64_t> requested, int default_tokens) {
  if (requested) return int(*requested);
  return std::max(1, default_tokens);
}

}  // namespace tessera
