#include "server/cli/sequence_driver.h"

#include <algorithm>

#include "engine/core/error.h"

namespace tessera::cli {

SequenceDriver::SequenceDriver(ModelRunner& runner, const SamplingParams& params, uint64_t seed)
    : runner_(runner), params_(params), seed_(seed), allocator_(int32_t(runner.kv_cache().n_pages())) {}

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
  const size_t step = size_t(std::clamp(chunk, 1, runner_.capacity().max_tokens));
  for (size_t begin = 0; begin < tokens.size(); begin += step) {
    const size_t end = std::min(tokens.size(), begin + step);
    StepPlan plan;
    plan.finished = std::move(finished_);
    finished_.clear();
    if (!registered_) {
      // The prompt is what is fed first; later tokens extend the sequence.
      prompt_len_ = tokens.size();
      plan.new_sequences.push_back({seq_id_, tokens, uint32_t(tokens.size()), params_, seed_});
      registered_ = true;
    }
    ensure_pages(length_ + (end - begin));
    SequenceStep s;
    s.seq_id = seq_id_;
    s.tokens.assign(tokens.begin() + long(begin), tokens.begin() + long(end));
    s.start_position = int32_t(length_);
    s.pages_from = uint32_t(pages_sent_);
    s.pages.assign(pages_.begin() + long(pages_sent_), pages_.end());
    pages_sent_ = pages_.size();
    s.all_logits = want_logits;
    s.sample = sample && end == tokens.size();
    plan.steps.push_back(std::move(s));
    StepResult r = runner_.step(plan);
    length_ += end - begin;
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
  pages_sent_ = 0;
  if (registered_) finished_.push_back(seq_id_);
  ++seq_id_;
  registered_ = false;
  length_ = 0;
  prompt_len_ = 0;
}

}  // namespace tessera::cli
