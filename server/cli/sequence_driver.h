#pragma once
// Drives one sequence through a ModelRunner for the command-line tools:
// pages from a PageAllocator, chunked prefill, then one token per step.
#include <cstdint>
#include <vector>

#include "engine/runtime/model_runner.h"
#include "scheduler/page_allocator.h"

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
  size_t length() const { return length_; }
  size_t prompt_length() const { return prompt_len_; }
  // Returns every page; the sequence starts again empty (as a new one).
  void reset();

 private:
  void ensure_pages(size_t n_positions);

  ModelRunner& runner_;
  SamplingParams params_;
  uint64_t seed_;
  PageAllocator allocator_;
  uint64_t seq_id_ = 1;
  bool registered_ = false;
  std::vector<uint64_t> finished_;
  std::vector<int32_t> pages_;
  size_t pages_sent_ = 0;
  size_t length_ = 0;     // tokens in the cache or being fed
  size_t prompt_len_ = 0;
  SampledToken last_;
};

}  // namespace tessera::cli
