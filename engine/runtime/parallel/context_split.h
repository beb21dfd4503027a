#pragma once
// Context parallelism: which tokens of a step plan each rank of a group
// computes. A step of at least `min_tokens` new tokens (a long prefill) is
// cut into 2 × world chunks and rank r takes chunks r and 2·world − 1 − r:
// under the causal mask an early chunk sees few keys and a late one many,
// so each rank's pair costs about the same. Other steps (decode tokens,
// drafts) run whole on every rank. Rank 0 always holds the last token of a
// split step, whose logits are sampled.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/runtime/step_plan.h"

namespace tessera {

// Tokens [begin, end) of a step.
struct TokenRange {
  int32_t begin = 0;
  int32_t end = 0;
  int32_t size() const { return end - begin; }
};

class ContextSplit {
 public:
  // `min_tokens` below 2 × world is raised to it, so no chunk is empty.
  ContextSplit(const StepPlan& plan, int world, int min_tokens);

  int world() const { return world_; }
  bool any() const { return any_; }
  bool split(size_t step) const { return split_[step]; }
  // The two chunks of step `step` that `rank` computes, in token order.
  std::array<TokenRange, 2> ranges(size_t step, int rank) const;
  // Tokens of split steps that `rank` computes, over the whole plan.
  int64_t split_tokens(int rank) const { return split_tokens_[size_t(rank)]; }

 private:
  int world_;
  bool any_ = false;
  std::vector<bool> split_;             // per step
  std::vector<int32_t> step_tokens_;    // per step
  std::vector<int64_t> split_tokens_;   // per rank
};

}  // namespace tessera
