#pragma once
// What the scheduler asks the engine to run in one iteration, and what comes
// back. The scheduler owns every array these views point into.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "engine/sampling_params.h"

namespace tessera {

struct SequenceStep {
  uint64_t seq_id = 0;
  std::span<const int32_t> tokens;       // new tokens: a prefill chunk or one decode token
  int32_t start_position = 0;            // position of tokens[0]
  std::span<const int32_t> block_table;  // the sequence's KV pages, covering start_position + tokens.size()
  bool sample = false;                   // draw the next token after this step
  bool all_logits = false;               // return logits for every token (perplexity, prompt logprobs)
  const SamplingParams* sampling = nullptr;
  std::span<const int32_t> history;      // prompt then output so far (penalties)
  size_t prompt_len = 0;
  std::mt19937_64* rng = nullptr;
};

struct StepPlan {
  std::vector<SequenceStep> sequences;
};

struct SequenceResult {
  uint64_t seq_id = 0;
  bool sampled = false;
  SampledToken token;
  std::vector<float> logits;  // [tokens][vocab] when all_logits was asked
};

struct StepResult {
  std::vector<SequenceResult> sequences;  // in plan order
};

}  // namespace tessera
