#include "scheduler/prompt_lookup.h"

#include <algorithm>
#include <random>

namespace tessera {
namespace {

uint64_t hash_tokens(uint64_t seed, std::span<const int32_t> tokens) {
  uint64_t h = seed ^ tokens.size();
  for (int32_t t : tokens) {
    h ^= uint64_t(uint32_t(t));
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

PromptLookup::PromptLookup(int ngram_min, int ngram_max)
    : ngram_min_(std::max(1, ngram_min)), ngram_max_(std::max(ngram_min_, ngram_max)) {
  std::random_device random;
  seed_ = (uint64_t(random()) << 32) ^ random();
  by_length_.resize(size_t(ngram_max_ - ngram_min_ + 1));
}

void PromptLookup::extend(std::span<const int32_t> tokens) {
  // Position j becomes a continuation once token j exists: the n tokens
  // before it map to j.
  for (size_t j = std::max<size_t>(indexed_, 1); j < tokens.size(); ++j) {
    for (int n = ngram_min_; n <= ngram_max_ && size_t(n) <= j; ++n) {
      by_length_[size_t(n - ngram_min_)][hash_tokens(seed_, tokens.subspan(j - size_t(n), size_t(n)))] = uint32_t(j);
    }
  }
  indexed_ = std::max(indexed_, tokens.size());
}

std::vector<int32_t> PromptLookup::propose(std::span<const int32_t> tokens, size_t max_tokens) const {
  if (max_tokens == 0) return {};
  for (int n = ngram_max_; n >= ngram_min_; --n) {
    if (tokens.size() <= size_t(n)) continue;
    const std::span<const int32_t> suffix = tokens.last(size_t(n));
    const auto& index = by_length_[size_t(n - ngram_min_)];
    const auto hit = index.find(hash_tokens(seed_, suffix));
    if (hit == index.end()) continue;
    const size_t next = hit->second;
    // A hash collision, or an index built over other tokens, proposes nothing.
    if (next < size_t(n) || next >= tokens.size() ||
        !std::equal(suffix.begin(), suffix.end(), tokens.begin() + long(next - size_t(n)))) {
      continue;
    }
    const size_t end = std::min(tokens.size(), next + max_tokens);
    return {tokens.begin() + long(next), tokens.begin() + long(end)};
  }
  return {};
}

}  // namespace tessera
