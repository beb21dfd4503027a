#pragma once
// One generation request as both front ends give it. HTTP (OpenAI JSON) and
// gRPC each fill the fields the client sent, checking only their own types;
// validate_generation() then checks every value once, against the model and
// the server's limits, with the same messages for both protocols.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/serving/bounded_json.h"
#include "server/serving/served_model.h"
#include "server/serving/structured_output.h"
#include "server/serving/text_generation.h"

namespace tessera {

struct ApiLimits {
  int max_n = 16;
  int max_stop_strings = 16;
  int max_top_logprobs = 20;
  JsonLimits json;
  size_t max_body_bytes = 8u << 20;  // request bodies and gRPC messages
};

// Entries a logit_bias map may hold; front ends check it before converting.
constexpr size_t kMaxLogitBias = 1024;

struct GenerationRequest {
  std::optional<double> temperature, top_p, min_p, presence_penalty, frequency_penalty, repetition_penalty;
  std::optional<int64_t> top_k, seed, n, best_of, priority, max_tokens, min_tokens;
  std::vector<std::pair<int64_t, double>> logit_bias;  // token id, bias
  std::vector<std::string> stop;
  std::vector<int64_t> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;          // vLLM's: control tokens left out of the text
  bool include_stop_str_in_output = false;  // vLLM's
  bool logprobs = false;
  std::optional<int64_t> top_logprobs;  // alternatives per token; needs logprobs
  std::optional<int64_t> prompt_logprobs;  // score the prompt, with this many alternatives per token
  std::optional<StructuredOutput> structured;
};

// 400 (ApiError naming the field) for any value out of range.
// `default_max_tokens` applies when max_tokens is absent; max_tokens 0
// (score the prompt only) needs prompt_logprobs.
GenerationParams validate_generation(const GenerationRequest& request, const ServedModel& model, const ApiLimits& limits,
                                     int default_max_tokens);

// Token ids of this model; a 400 naming `param` otherwise.
std::vector<int32_t> checked_token_ids(const std::vector<int64_t>& ids, const ServedModel& model, const std::string& param);

// 400 naming `param` when a text of `bytes` bytes must have more tokens than
// the model's maximum length, found before spending time tokenizing it.
void check_prompt_bytes(const ServedModel& model, size_t bytes, const std::string& param);

// The value, or a 400 naming `key` when outside [min, max].
int64_t checked_integer(const std::string& key, int64_t value, int64_t min, int64_t max);
double checked_number(const std::string& key, double value, double min, double max);

}  // namespace tessera
