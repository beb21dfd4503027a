#pragma once
// The generation fields completions and chat completions share: sampling,
// penalties, logit bias, stop strings, n, seed and the vLLM extensions
// (top_k, min_p, repetition_penalty, ignore_eos, priority).
#include "server/openai/request_fields.h"
#include "server/serving/served_model.h"
#include "server/serving/text_generation.h"

namespace tessera {

struct ApiLimits {
  int max_n = 16;
  int max_stop_strings = 16;
  int max_top_logprobs = 20;
  int max_json_depth = 64;
};

// Reads everything but max_tokens and the log-probability fields, whose
// names and meaning differ between the two endpoints.
GenerationParams read_generation_fields(RequestFields& f, const ServedModel& model, const ApiLimits& limits);

// Token ids of this model from a JSON array; 400 naming `param` otherwise.
std::vector<int32_t> read_token_ids(const Json& array, const ServedModel& model, const std::string& param);

// max_tokens when given, else what the model length leaves after the prompt
// (at least 1, so that an over-long prompt is refused by admission).
int resolve_max_tokens(std::optional<int64_t> requested, int default_tokens);

}  // namespace tessera
