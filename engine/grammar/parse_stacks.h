#pragma once
// The parser state of a Grammar: a set of stacks of positions (a pushdown
// automaton run on every alternative at once). Stacks are interned in a
// pool (a node is a top position plus the stack below it), so a set of
// stacks is a sorted vector of ids, and sets compare and hash as vectors.
// The top of every stack in a set is a byte-set position: calls are
// expanded and finished alternatives popped as soon as they appear.
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/grammar/grammar.h"

namespace tessera::grammar {

using StackSet = std::vector<uint32_t>;  // sorted, unique stack ids

class ParseStacks {
 public:
  static constexpr uint32_t kEmpty = 0;  // the empty stack: the root rule has matched
  static constexpr uint32_t kExit = 1;   // below a walk's start: reached when its rule ends

  // `max_nodes` bounds the memory of the pool; past it, advance() throws.
  ParseStacks(const Grammar& grammar, size_t max_nodes);

  const Grammar& grammar() const { return grammar_; }
  // Before any byte: the root's alternatives.
  StackSet initial();
  // A stack whose only frame is `position` (a byte-set element) above kExit.
  uint32_t start_at(uint32_t position);
  // The stacks after consuming `byte` from any stack of `in`; kEmpty and
  // kExit consume nothing. `out` is replaced.
  void advance(const StackSet& in, uint8_t byte, StackSet& out);
  // Work allowed until the next call, in stacks advanced by one byte; past
  // it advance() throws, so no grammar can hold the model loop for long.
  void set_budget(uint64_t stack_steps) { budget_ = stack_steps; }
  // The byte-set position on top of a stack other than kEmpty and kExit.
  uint32_t top(uint32_t stack) const { return nodes_[stack].position; }
  size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t position;
    uint32_t below;
  };
  uint32_t push(uint32_t below, uint32_t position);
  // Adds to `out` the stacks that continue from `position` above `below`.
  // Iterative (an explicit work list): a client's grammar sets its depth,
  // and no thread's stack should be what bounds it.
  void expand(uint32_t below, uint32_t position, StackSet& out);
  const StackSet& advance_one(uint32_t stack, uint8_t byte);

  const Grammar& grammar_;
  size_t max_nodes_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;        // (below, position) -> node
  std::unordered_map<uint64_t, uint32_t> memo_;         // (stack, byte) -> index into results_
  std::vector<StackSet> results_;
  std::unordered_set<uint64_t> expanded_;               // (below, position) seen by the current expansion
  struct PendingExpansion {
    uint32_t below;
    uint32_t position;
    int depth;  // rules entered or returned from since the expansion began
  };
  std::vector<PendingExpansion> pending_;               // the expansion's work list, kept for its capacity
  uint64_t budget_ = UINT64_MAX;
};

}  // namespace tessera::grammar
