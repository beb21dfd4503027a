#include "server/openai/generation_fields.h"

#include <charconv>
#include <limits>

namespace tessera {
namespace {

constexpr int64_t kAnyInteger = std::numeric_limits<int64_t>::max();
constexpr double kAnyNumber = std::numeric_limits<double>::max();

std::vector<std::pair<int64_t, double>> read_logit_bias(RequestFields& f) {
  std::vector<std::pair<int64_t, double>> bias;
  const Json* v = f.raw("logit_bias");
  if (!v) return bias;
  if (!v->is_object()) throw ApiError::invalid("'logit_bias' must map token ids to numbers", "logit_bias");
  if (v->size() > kMaxLogitBias) {
    throw ApiError::invalid("'logit_bias' has more than " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
  }
  for (const auto& [key, value] : v->items()) {
    int64_t id = -1;
    const auto r = std::from_chars(key.data(), key.data() + key.size(), id);
    if (r.ec != std::errc() || r.ptr != key.data() + key.size()) {
      throw ApiError::invalid("'logit_bias' key '" + key + "' is not a token id", "logit_bias");
    }
    if (!value.is_number()) throw ApiError::invalid("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
    bias.emplace_back(id, value.get<double>());
  }
  return bias;
}

std::vector<int64_t> read_stop_token_ids(RequestFields& f) {
  std::vector<int64_t> ids;
  const Json* v = f.raw("stop_token_ids");
  if (!v) return ids;
  if (!v->is_array()) throw ApiError::invalid("'stop_token_ids' must be an array of token ids", "stop_token_ids");
  for (const auto& id : *v) {
    if (!id.is_number_integer()) throw ApiError::invalid("'stop_token_ids' entries must be token ids of this model", "stop_token_ids");
    ids.push_back(id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(kAnyInteger) ? -1 : id.get<int64_t>());
  }
  return ids;
}

}  // namespace

GenerationRequest read_generation_request(RequestFields& f) {
  GenerationRequest r;
  r.temperature = f.number("temperature", -kAnyNumber, kAnyNumber);
  r.top_p = f.number("top_p", -kAnyNumber, kAnyNumber);
  r.top_k = f.integer("top_k", -kAnyInteger, kAnyInteger);
  r.min_p = f.number("min_p", -kAnyNumber, kAnyNumber);
  r.presence_penalty = f.number("presence_penalty", -kAnyNumber, kAnyNumber);
  r.frequency_penalty = f.number("frequency_penalty", -kAnyNumber, kAnyNumber);
  r.repetition_penalty = f.number("repetition_penalty", -kAnyNumber, kAnyNumber);
  r.seed = f.integer("seed", std::numeric_limits<int64_t>::min(), kAnyInteger);
  r.logit_bias = read_logit_bias(f);
  r.n = f.integer("n", -kAnyInteger, kAnyInteger);
  r.best_of = f.integer("best_of", -kAnyInteger, kAnyInteger);
  r.stop = f.strings("stop", std::numeric_limits<size_t>::max());
  r.stop_token_ids = read_stop_token_ids(f);
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.priority = f.integer("priority", -kAnyInteger, kAnyInteger);
  f.ignore("user");
  return r;
}

std::vector<int32_t> read_token_ids(const Json& array, const ServedModel& model, const std::string& param) {
  if (!array.is_array()) throw ApiError::invalid("'" + param + "' must be an array of token ids", param);
  std::vector<int64_t> ids;
  ids.reserve(array.size());
  for (const auto& t : array) {
    // Out-of-range integers become -1 so the check below names them.
    ids.push_back(t.is_number_integer() && !(t.is_number_unsigned() && t.get<uint64_t>() > uint64_t(kAnyInteger)) ? t.get<int64_t>() : -1);
  }
  return checked_token_ids(ids, model, param);
}

}  // namespace tessera
