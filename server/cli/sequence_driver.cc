#include "server/cli/sequence_driver.h"

#include <algorithm>

#include "engine/error.h"

namespace tessera::cli {

SequenceDriver::SequenceDriver(ModelRunner& runner, const SamplingParams& params, uint64_t seed)
    : runner_(runner), params_(params), rng_(seed), allocator_(int32_t(runner.kv_cache().n_pages())) {}

void SequenceDriver::ensure_pages(size_t n_positions) {
  const size_t ps = size_t(runner_.page_size());
  while (pages_.size() * ps < n_positions) {
    const auto page = allocator_.allocate();
    if (!page) {
      throw Error("KV cache full: " + std::to_string(n_positions) + " positions need more than the " +
                  std::to_string(allocator_.total()) + " pages of " + std::to_string(ps) + " (raise --kv-budget-mb)");
    }
    pages_.push_back(*page);
  }
}

std::vector<float> SequenceDriver::feed(const std::vector<int32_t>& tokens, int chunk, bool want_logits, bool sample) {
  std::vector<float> logits;
  if (history_.empty()) prompt_len_ = tokens.size();
  const size_t step = size_t(std::max(chunk, 1));
  for (size_t begin = 0; begin < tokens.size(); begin += step) {
    const size_t end = std::min(tokens.size(), begin + step);
    const int32_t start = int32_t(history_.size());
    history_.insert(history_.end(), tokens.begin() + long(begin), tokens.begin() + long(end));
    ensure_pages(history_.size());
    SequenceStep s;
    s.tokens = std::span<const int32_t>(history_).subspan(size_t(start), end - begin);
    s.start_position = start;
    s.block_table = pages_;
    s.all_logits = want_logits;
    s.sample = sample && end == tokens.size();
    s.sampling = &params_;
    s.history = history_;
    s.prompt_len = prompt_len_;
    s.rng = &rng_;
    StepResult r = runner_.step(StepPlan{{s}});
    if (want_logits) logits.insert(logits.end(), r.sequences[0].logits.begin(), r.sequences[0].logits.end());
    if (r.sequences[0].sampled) last_ = r.sequences[0].token;
  }
  return logits;
}

SampledToken SequenceDriver::next() {
  feed({last_.id}, 1, false, true);
  return last_;
}

void SequenceDriver::reset() {
  for (int32_t page : pages_) allocator_.release(page);
  pages_.clear();
  history_.clear();
  prompt_len_ = 0;
}

}  // namespace tessera::cli
