#pragma once
// Turns one row of logits into a token under that row's SamplingParams:
// logit bias, then penalties, then the token filter (an output grammar),
// then (for the reported log-probabilities) a log-softmax, then
// temperature, top-k, top-p and min-p, then a draw.
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/runtime/sampling_params.h"

namespace tessera {

// Limits which tokens may be drawn (an output grammar). The sampler asks
// first whether the most likely token is allowed, which is cheap, and masks
// the whole row only when it must.
class TokenFilter {
 public:
  virtual ~TokenFilter() = default;
  virtual bool allows(int32_t token) = 0;
  // Sets the logits of tokens that may not be drawn to -infinity.
  virtual void mask_logits(std::span<float> logits) = 0;
};

struct SampledToken {
  int32_t id = -1;
  float logprob = 0.0f;                          // of the chosen token
  std::vector<std::pair<int32_t, float>> top;    // most likely alternatives, best first
  int32_t rank = 0;                              // score_token only: 1 + tokens more likely than it
};

// `logits` is modified in place. `history` holds the prompt and the output so
// far; the first `prompt_len` of it are the prompt.
// With a filter, the draw (and the reported log-probabilities) come from the
// filtered distribution.
SampledToken sample_token(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> history,
                          size_t prompt_len, std::mt19937_64& rng, TokenFilter* filter = nullptr);

// A given token's log-probability under a raw row of logits (no sampling
// parameters apply), its rank, and the `top` most likely tokens: how a
// prompt token is scored (prompt log-probabilities). `token` must be in
// the row.
SampledToken score_token(std::span<const float> logits, int32_t token, int top);

}  // namespace tessera
