#pragma once
// What a client asks for, and what flows back to it. Each accepted request
// ends with exactly one final event: finished (stop or length), cancelled, or
// an error.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/runtime/sampling_params.h"

namespace tessera {

enum class FinishReason : uint8_t { kNone, kStop, kLength, kCancelled, kError };

// Embeddings: how a prompt's final hidden states become one vector.
enum class Pooling : uint8_t { kNone, kLast, kMean };

struct Request {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int max_new_tokens = 16;
  int priority = 0;                      // higher runs first; FCFS within a priority
  std::vector<int32_t> stop_token_ids;   // end-of-generation tokens (not emitted as text)
  bool ignore_eos = false;
  // At least 0: every prompt token after the first is scored (its
  // log-probability and rank) with this many alternatives, reported before
  // any output; such a prompt is computed whole, never taken from the prefix
  // cache. With max_new_tokens 0 the request ends once its prompt is scored.
  int prompt_logprobs = -1;
  // Other than kNone (with max_new_tokens 0): the request computes its
  // prompt and ends with the pooled final hidden states in its last event.
  Pooling pooling = Pooling::kNone;
};

struct RequestEvent {
  uint64_t request_id = 0;
  bool has_token = false;
  SampledToken token;                   // valid when has_token
  FinishReason finish = FinishReason::kNone;  // set on the final event
  std::string error;                    // kError only
  int prompt_tokens = 0;                // on the final event: usage
  int completion_tokens = 0;
  double queue_seconds = -1.0;          // on the first event after it was first scheduled: time spent waiting
  int cached_prompt_tokens = -1;        // on that event too: prompt tokens found in the prefix cache
  std::vector<SampledToken> prompt_logprobs;  // the next prompt tokens' scores, in order from the second
  std::vector<float> embedding;         // on the final event of a pooling request: the pooled hidden state
};

using EventSink = std::function<void(const RequestEvent&)>;

}  // namespace tessera
