#pragma once
// The OpenAI JSON fields completions and chat completions share (sampling,
// penalties, logit bias, stop strings, n, seed and vLLM's extensions top_k,
// min_p, repetition_penalty, ignore_eos, priority), read into the
// protocol-neutral GenerationRequest: types here, values in
// validate_generation().
#include "server/serving/request_fields.h"
#include "server/serving/generation_request.h"
#include "server/serving/served_model.h"

namespace tessera {

// Reads everything but max_tokens and the log-probability fields, whose
// names and meaning differ between the two endpoints.
GenerationRequest read_generation_request(RequestFields& f);

// Token ids of this model from a JSON array; 400 naming `param` otherwise.
std::vector<int32_t> read_token_ids(const Json& array, const ServedModel& model, const std::string& param);

}  // namespace tessera
