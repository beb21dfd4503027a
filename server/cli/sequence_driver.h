#pragma once
// Drives one sequence through a ModelRunner for the command-line tools:
// pages from a BlockAllocator, chunked prefill, then one token per step.
#include <cstdint>
#include <random>
#include <vector>

#include "engine/model_runner.h"
#include "scheduler/block_allocator.h"

namespace tessera::cli {

class SequenceDriver {
 public:
  SequenceDriver(ModelRunner& runner, const SamplingParams& params, uint64_t seed);

  // Runs `tokens` after what the sequence already holds, `chunk` at a time.
  // With `want_logits`, returns the logits of every token ([n][vocab]);
  // with `sample`, draws the next token after the last one.
  std::vector<float> feed(const std::vector<int32_t>& tokens, int chunk, bool want_logits, bool sample);
  // Feeds the last sampled token and draws the next.
  SampledToken next();

  const SampledToken& last() const { return last_; }
  size_t length() const { return history_.size(); }
  size_t prompt_length() const { return prompt_len_; }
  // Returns every page; the sequence starts again empty.
  void reset();

 private:
  void ensure_pages(size_t n_positions);

  ModelRunner& runner_;
  SamplingParams params_;
  std::mt19937_64 rng_;
  BlockAllocator allocator_;
  std::vector<int32_t> pages_;
  std::vector<int32_t> history_;
  size_t prompt_len_ = 0;
  SampledToken last_;
};

}  // namespace tessera::cli
