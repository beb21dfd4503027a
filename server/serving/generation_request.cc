#include "server/serving/generation_request.h"

#include <cstdio>

#include "engine/core/token_ids.h"
#include "server/serving/api_error.h"

namespace tessera {

int64_t checked_integer(const std::string& key, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    throw ApiError::invalid("'" + key + "' must be between " + std::to_string(min) + " and " + std::to_string(max) +
                                ", got " + std::to_string(value), key);
  }
  return value;
}

double checked_number(const std::string& key, double value, double min, double max) {
  if (!(value >= min && value <= max)) {
    char range[64];
    std::snprintf(range, sizeof range, "%g and %g", min, max);
    throw ApiError::invalid("'" + key + "' must be between " + range, key);
  }
  return value;
}

std::vector<int32_t> checked_token_ids(const std::vector<int64_t>& ids, const ServedModel& model, const std::string& param) {
  const int64_t vocab = int64_t(model.tokenizer().vocab().size());
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    if (!token_in_vocabulary(id, vocab)) {
      throw ApiError::invalid("'" + param + "' token ids must be integers between 0 and " + std::to_string(vocab - 1), param);
    }
    out.push_back(int32_t(id));
  }
  return out;
}

void check_prompt_bytes(const ServedModel& model, size_t bytes, const std::string& param) {
  const size_t fewest_tokens = bytes / model.tokenizer().max_token_bytes();
  if (fewest_tokens > size_t(model.max_model_len)) {
    throw ApiError::invalid("the prompt (" + std::to_string(bytes) + " bytes, at least " + std::to_string(fewest_tokens) +
                                " tokens) can never fit the model's maximum length of " +
                                std::to_string(model.max_model_len) + " tokens", param);
  }
}

namespace {

float number_or(const std::optional<double>& v, const char* key, double min, double max, float fallback) {
  return v ? float(checked_number(key, *v, min, max)) : fallback;
}

void read_sampling(const GenerationRequest& r, const ServedModel& model, const ApiLimits& limits, SamplingParams& s) {
  // Fields left out take the model's defaults (config, then its files),
  // then OpenAI's.
  const SamplingDefaults& d = model.sampling_defaults;
  s.temperature = number_or(r.temperature, "temperature", 0.0, 2.0, float(d.temperature.value_or(1.0)));
  s.top_p = number_or(r.top_p, "top_p", 0.0, 1.0, float(d.top_p.value_or(1.0)));
  if (s.top_p <= 0.0f) throw ApiError::invalid("'top_p' must be greater than 0", "top_p");
  const int64_t top_k = r.top_k ? checked_integer("top_k", *r.top_k, -1, 1 << 30) : d.top_k.value_or(0);
  s.top_k = top_k < 0 ? 0 : int(top_k);
  s.min_p = number_or(r.min_p, "min_p", 0.0, 1.0, float(d.min_p.value_or(0.0)));
  s.presence_penalty = number_or(r.presence_penalty, "presence_penalty", -2.0, 2.0, 0.0f);
  s.frequency_penalty = number_or(r.frequency_penalty, "frequency_penalty", -2.0, 2.0, 0.0f);
  s.repetition_penalty =
      number_or(r.repetition_penalty, "repetition_penalty", 0.01, 10.0, float(d.repetition_penalty.value_or(1.0)));
  if (r.seed) s.seed = uint64_t(*r.seed);
  const int64_t vocab = int64_t(model.tokenizer().vocab().size());
  if (r.logit_bias.size() > kMaxLogitBias) {
    throw ApiError::invalid("'logit_bias' has more than " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
  }
  for (const auto& [id, bias] : r.logit_bias) {
    if (!token_in_vocabulary(id, vocab)) {
      throw ApiError::invalid("'logit_bias' key '" + std::to_string(id) + "' is not a token id of this model (0 to " +
                                  std::to_string(vocab - 1) + ")", "logit_bias");
    }
    if (!(bias >= -100.0 && bias <= 100.0)) throw ApiError::invalid("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
    s.logit_bias.emplace_back(int32_t(id), float(bias));
  }
  s.logprobs = r.logprobs;
  if (r.top_logprobs) {
    s.top_logprobs = int(checked_integer("top_logprobs", *r.top_logprobs, 0, limits.max_top_logprobs));
    if (!r.logprobs) throw ApiError::invalid("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
}

void read_stops(const GenerationRequest& r, const ServedModel& model, const ApiLimits& limits, GenerationParams& p) {
  if (r.stop.size() > size_t(limits.max_stop_strings)) {
    throw ApiError::invalid("'stop' has " + std::to_string(r.stop.size()) + " entries; at most " +
                                std::to_string(limits.max_stop_strings) + " are allowed", "stop");
  }
  for (const std::string& stop : r.stop) {
    if (stop.empty()) throw ApiError::invalid("'stop' strings must not be empty", "stop");
    if (stop.size() > 1024) throw ApiError::invalid("'stop' strings must be at most 1024 bytes", "stop");
  }
  p.stop = r.stop;
  if (r.stop_token_ids.size() > size_t(limits.max_stop_strings)) {
    throw ApiError::invalid("'stop_token_ids' must be an array of at most " + std::to_string(limits.max_stop_strings) +
                                " token ids", "stop_token_ids");
  }
  for (int64_t id : r.stop_token_ids) {
    if (!token_in_vocabulary(id, int64_t(model.tokenizer().vocab().size()))) {
      throw ApiError::invalid("'stop_token_ids' entries must be token ids of this model", "stop_token_ids");
    }
    p.stop_token_ids.push_back(int32_t(id));
  }
}

}  // namespace

GenerationParams validate_generation(const GenerationRequest& r, const ServedModel& model, const ApiLimits& limits,
                                     int default_max_tokens) {
  GenerationParams p;
  read_sampling(r, model, limits, p.sampling);
  p.n = r.n ? int(checked_integer("n", *r.n, 1, limits.max_n)) : 1;
  if (r.best_of && checked_integer("best_of", *r.best_of, 1, limits.max_n) != p.n) {
    throw ApiError::invalid("'best_of' other than n is not supported", "best_of");
  }
  read_stops(r, model, limits, p);
  if (r.structured) {
    const StructuredOutput& s = *r.structured;
    GrammarCompiler::Compiled c =
        model.grammars->compile([&] { return structured_output_identity(s); }, [&] { return structured_output_gbnf(s); }, s.param);
    p.sampling.grammar.gbnf = std::move(c.gbnf);
    p.sampling.grammar.prepared = std::move(c.prepared);
  }
  p.ignore_eos = r.ignore_eos;
  p.render_special = !r.skip_special_tokens;
  p.include_stop_string = r.include_stop_str_in_output;
  p.priority = r.priority ? int(checked_integer("priority", *r.priority, -1000000, 1000000)) : 0;
  // Without the priority policy, a client choosing its place in the queue
  // (or who is preempted) would be trusted with everyone's latency.
  if (p.priority != 0 && model.config.scheduler.policy != "priority") {
    throw ApiError::invalid("'priority' is not enabled for model '" + model.name() + "' (scheduler.policy: priority)", "priority");
  }
  if (r.prompt_logprobs) p.prompt_logprobs = int(checked_integer("prompt_logprobs", *r.prompt_logprobs, 0, limits.max_top_logprobs));
  const int64_t least_tokens = p.prompt_logprobs >= 0 ? 0 : 1;
  p.max_tokens = r.max_tokens ? int(checked_integer("max_tokens", *r.max_tokens, least_tokens, 1 << 30)) : std::max(1, default_max_tokens);
  // vLLM's: end-of-generation and stop ids (and stop strings) wait for min_tokens output tokens.
  if (r.min_tokens) p.sampling.min_tokens = int(checked_integer("min_tokens", *r.min_tokens, 0, p.max_tokens));
  return p;
}

}  // namespace tessera
