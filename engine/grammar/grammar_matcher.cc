#include "engine/grammar/grammar_matcher.h"

#include <algorithm>
#include <limits>

namespace tessera::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<CompiledGrammar> grammar, std::vector<int32_t> end_tokens)
    : grammar_(std::move(grammar)), end_tokens_(std::move(end_tokens)), state_(grammar_->initial()) {}

bool GrammarMatcher::is_end(int32_t token) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
}

bool GrammarMatcher::complete() const { return std::binary_search(state_.begin(), state_.end(), ParseStacks::kEmpty); }

bool GrammarMatcher::finished() { return !grammar_->allowed(state_).any(); }

bool GrammarMatcher::allows(int32_t token) {
  if (token < 0 || size_t(token) >= grammar_->vocab().size()) return false;
  if (is_end(token)) return complete() || finished();
  checked_next_ = grammar_->advance(state_, token);
  checked_token_ = token;
  return !checked_next_.empty();
}

bool GrammarMatcher::advance(int32_t token) {
  if (token < 0 || size_t(token) >= grammar_->vocab().size()) return false;
  if (is_end(token)) return complete() || finished();
  // The sampler usually asked allows() for this token just before.
  StackSet next = token == checked_token_ ? std::move(checked_next_) : grammar_->advance(state_, token);
  checked_token_ = -1;
  if (next.empty()) return false;
  state_ = std::move(next);
  return true;
}

void GrammarMatcher::mask_logits(std::span<float> logits) {
  const TokenMask& allowed = grammar_->allowed(state_);
  const bool ends = complete() || !allowed.any();
  std::vector<std::pair<int32_t, float>> kept;  // end tokens keep their own logits
  if (ends) {
    for (int32_t id : end_tokens_) {
      if (id >= 0 && size_t(id) < logits.size()) kept.emplace_back(id, logits[size_t(id)]);
    }
  }
  const float blocked = -std::numeric_limits<float>::infinity();
  const size_t n = std::min(logits.size(), grammar_->vocab().size());
  for (size_t id = 0; id < n; ++id) {
    if (!allowed.test(int32_t(id))) logits[id] = blocked;
  }
  for (size_t id = n; id < logits.size(); ++id) logits[id] = blocked;
  for (const auto& [id, value] : kept) logits[size_t(id)] = value;
}

}  // namespace tessera::grammar
