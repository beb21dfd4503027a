#pragma once
// What the scheduler asks the engine to run in one iteration, and what comes
// back: plain values with no pointers into scheduler memory, so a plan can
// be encoded (engine/runtime/step_plan_codec.h) and run by another process. As in a
// scheduler output of vLLM, a sequence is described in full on its first
// step and by deltas after that; the runner keeps each sequence's sampling
// parameters, random generator, tokens and page table between steps.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/runtime/sampling_params.h"

namespace tessera {

// A sequence the runner has not seen: everything it keeps for it.
struct NewSequence {
  uint64_t seq_id = 0;
  std::vector<int32_t> tokens;  // prompt, then any output already generated
  uint32_t prompt_len = 0;      // tokens[0, prompt_len) are the prompt (penalties tell them apart)
  SamplingParams sampling;
  uint64_t seed = 0;            // of the sequence's random generator
};

// Which final hidden states (after the output norm) a step returns: the
// input of an embedding's pooling.
enum class HiddenStates : uint8_t { kNone, kLast, kAll };

struct SequenceStep {
  uint64_t seq_id = 0;
  std::vector<int32_t> tokens;   // new tokens: a prefill chunk or one decode token
  int32_t start_position = 0;    // position of tokens[0]
  // The page table is cut to `pages_from` entries, then `pages` appended:
  // new pages of a running sequence, or the whole table (pages_from 0) of a
  // new or resumed one.
  uint32_t pages_from = 0;
  std::vector<int32_t> pages;
  bool sample = false;           // draw the next token after this step
  bool all_logits = false;       // return logits for every token (perplexity, prompt logprobs)
  // The last `draft` tokens are proposals (speculative decoding), not yet
  // part of the sequence: with `sample`, each is accepted while it equals
  // the token drawn at the position before it, and the first draw that
  // differs (or the one after the last proposal) ends the step. The draws
  // are those of decoding one token at a time, so the output is the same.
  uint32_t draft = 0;
  HiddenStates hidden = HiddenStates::kNone;  // returned in SequenceResult::hidden

  bool operator==(const SequenceStep&) const = default;
};

struct StepPlan {
  std::vector<uint64_t> finished;          // sequences the runner forgets before this step
  std::vector<NewSequence> new_sequences;  // registered before this step
  std::vector<SequenceStep> steps;         // run in this order
};

struct SequenceResult {
  uint64_t seq_id = 0;
  bool sampled = false;
  std::vector<SampledToken> accepted;  // draft tokens drawn as proposed, in order, before `token`
  SampledToken token;
  std::string error;          // the sequence failed (its output grammar); nothing was sampled
  std::vector<float> logits;  // [tokens][vocab] when all_logits was asked
  std::vector<float> hidden;  // [rows][d_model]: every step token's, or the last's, as `hidden` asked
};

struct StepResult {
  std::vector<SequenceResult> sequences;  // in step order
};

}  // namespace tessera
