#include "engine/runtime/parallel/context_split.h"

#include <algorithm>

namespace tessera {

ContextSplit::ContextSplit(const StepPlan& plan, int world, int min_tokens)
    : world_(std::max(world, 1)), split_(plan.steps.size(), false), step_tokens_(plan.steps.size(), 0),
      split_tokens_(size_t(world_), 0) {
  if (world_ < 2) return;
  const int64_t threshold = std::max<int64_t>(min_tokens, 2 * int64_t(world_));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const SequenceStep& s = plan.steps[i];
    step_tokens_[i] = int32_t(s.tokens.size());
    split_[i] = s.draft == 0 && int64_t(s.tokens.size()) >= threshold;
    if (!split_[i]) continue;
    any_ = true;
    for (int r = 0; r < world_; ++r) {
      for (const TokenRange& range : ranges(i, r)) split_tokens_[size_t(r)] += range.size();
    }
  }
}

std::array<TokenRange, 2> ContextSplit::ranges(size_t step, int rank) const {
  const int64_t n = step_tokens_[step], chunks = 2 * int64_t(world_);
  auto chunk = [&](int64_t c) { return TokenRange{int32_t(c * n / chunks), int32_t((c + 1) * n / chunks)}; };
  return {chunk(rank), chunk(chunks - 1 - rank)};
}

}  // namespace tessera
