#pragma once
// Drives the generations of one HTTP request to their end: polls them in
// turn, hands each update on, and cancels everything once the client is
// gone (a failed write or a closed connection), so that the scheduler frees
// the request's KV pages at its next step.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/serving/api_error.h"
#include "server/serving/generation_request.h"
#include "server/serving/text_generation.h"

namespace tessera {

// Returns false when the client should no longer be written to.
using UpdateSink = std::function<bool(size_t generation, const ChoiceUpdate& update)>;

// True when every generation finished; false when the client went away.
bool drive_generations(std::vector<std::unique_ptr<TextGeneration>>& generations, const std::function<bool()>& client_gone,
                       const UpdateSink& on_update);

// Starts one generation per prompt; a refusal becomes the ApiError the
// client gets (429 with Retry-After, or 400).
std::vector<std::unique_ptr<TextGeneration>> start_generations(ServedModel& model,
                                                               const std::vector<std::vector<int32_t>>& prompts,
                                                               const GenerationParams& params);

// 503 unless the model's loop takes work.
void require_ready(const ServedModel& model);

// The ApiError of a refused submission: 429 with Retry-After when the queue
// is full, else 400 naming `prompt_param` (tokens the model lacks) or
// `length_param` (too long to fit).
[[noreturn]] void throw_refusal(const StartFailure& failure, const std::string& prompt_param, const std::string& length_param);

// {"prompt_tokens", "completion_tokens", "total_tokens"} over all generations.
nlohmann::ordered_json usage_of(const std::vector<std::unique_ptr<TextGeneration>>& generations);

// "data: <json>\n\n", with invalid UTF-8 in token bytes replaced.
std::string sse_event(const nlohmann::ordered_json& payload);
std::string json_text(const nlohmann::ordered_json& payload);

// A unique response id with the given prefix ("cmpl-", "chatcmpl-").
std::string new_response_id(const std::string& prefix);

}  // namespace tessera
