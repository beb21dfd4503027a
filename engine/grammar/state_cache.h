#pragma once
// Parser states (sets of stacks) as small ids with their byte transitions
// in dense rows. A token table's walk over the vocabulary steps the same
// few states hundreds of thousands of times (the body of a string loops on
// one state); with rows a step is one array read instead of a hash lookup
// per stack. Its memory is bounded: the caller drops all but the states it
// still holds when it nears the bound.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar/parse_stacks.h"

namespace tessera::grammar {

class StateCache {
 public:
  static constexpr uint32_t kDead = 0;  // the empty set: no stack survived

  // `max_states` bounds the rows: 1 KiB each.
  explicit StateCache(ParseStacks& stacks, size_t max_states = 4096);

  uint32_t intern(const StackSet& set);
  // The state after `byte`; charged to the parser's budget only when new.
  uint32_t step(uint32_t state, uint8_t byte) {
    const size_t slot = size_t(state) * 256 + byte;
    uint32_t next = rows_[slot];
    if (next == kUnknown) {
      next = compute(state, byte);
      rows_[slot] = next;
    }
    return next;
  }
  // Whether a stack of the state has left the rule the walk started in.
  bool holds_exit(uint32_t state) const { return exits_[state] != 0; }
  size_t size() const { return sets_.size(); }
  // True when `headroom` new states might not fit.
  bool nearly_full(size_t headroom) const { return sets_.size() + headroom > max_states_; }
  // Forgets every state but `states[0..n)`, which are renumbered in place.
  void keep_only(uint32_t* states, size_t n);

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  uint32_t compute(uint32_t state, uint8_t byte);
  void clear();

  ParseStacks& stacks_;
  size_t max_states_;
  std::vector<StackSet> sets_;
  std::vector<uint8_t> exits_;
  std::vector<uint32_t> rows_;  // [state * 256 + byte] -> state, kUnknown until stepped
  std::unordered_map<std::string, uint32_t> index_;  // set bytes -> state
  StackSet scratch_;
};

}  // namespace tessera::grammar
