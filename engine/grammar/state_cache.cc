#include "engine/grammar/state_cache.h"

#include <algorithm>

namespace tessera::grammar {
namespace {

std::string set_key(const StackSet& set) {
  return std::string(reinterpret_cast<const char*>(set.data()), set.size() * sizeof(uint32_t));
}

}  // namespace

StateCache::StateCache(ParseStacks& stacks, size_t max_states) : stacks_(stacks), max_states_(std::max<size_t>(max_states, 2)) {
  clear();
}

void StateCache::clear() {
  sets_.clear();
  exits_.clear();
  rows_.clear();
  index_.clear();
  sets_.emplace_back();  // kDead, whose every byte leads back to it
  exits_.push_back(0);
  rows_.assign(256, kDead);
  index_.emplace(std::string(), kDead);
}

uint32_t StateCache::intern(const StackSet& set) {
  auto [it, fresh] = index_.emplace(set_key(set), uint32_t(sets_.size()));
  if (fresh) {
    sets_.push_back(set);
    exits_.push_back(std::binary_search(set.begin(), set.end(), ParseStacks::kExit) ? 1 : 0);
    rows_.resize(rows_.size() + 256, kUnknown);
  }
  return it->second;
}

uint32_t StateCache::compute(uint32_t state, uint8_t byte) {
  stacks_.advance(sets_[state], byte, scratch_);
  return intern(scratch_);
}

void StateCache::keep_only(uint32_t* states, size_t n) {
  std::vector<StackSet> kept;
  kept.reserve(n);
  for (size_t i = 0; i < n; ++i) kept.push_back(sets_[states[i]]);
  clear();
  for (size_t i = 0; i < n; ++i) states[i] = intern(kept[i]);
}

}  // namespace tessera::grammar
