#pragma once
// Draft tokens without a draft model (prompt lookup, vLLM's "ngram"
// speculation): the last n tokens of a sequence are looked up among its
// earlier tokens, prompt and output alike, and the tokens that followed the
// most recent earlier occurrence are proposed. The engine verifies them all
// in one forward pass. An index from each n-gram to where it last appeared
// is extended as tokens arrive, so proposing costs the same whatever the
// sequence's length.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tessera {

class PromptLookup {
 public:
  // Looks for suffixes of `ngram_max` tokens down to `ngram_min` (1 <= min <= max).
  PromptLookup(int ngram_min, int ngram_max);

  // Indexes tokens[0, size) not seen before; `tokens` only ever grows.
  void extend(std::span<const int32_t> tokens);
  // Up to `max_tokens` tokens that followed the most recent earlier
  // occurrence of the longest suffix of `tokens` found; empty when none.
  std::vector<int32_t> propose(std::span<const int32_t> tokens, size_t max_tokens) const;

 private:
  int ngram_min_;
  int ngram_max_;
  // Keys hash with a seed of this index's own, so that no prompt can be
  // made to pile its n-grams into one bucket of the maps.
  uint64_t seed_ = 0;
  size_t indexed_ = 0;  // continuations indexed: positions [1, indexed_)
  // by_length_[n - ngram_min_]: hash of n tokens -> the position after their
  // most recent occurrence that has a token after it.
  std::vector<std::unordered_map<uint64_t, uint32_t>> by_length_;
};

}  // namespace tessera
