#include "engine/grammar/parse_stacks.h"

#include <algorithm>
#include <limits>

namespace tessera::grammar {
namespace {

constexpr uint32_t kNoPosition = std::numeric_limits<uint32_t>::max();
constexpr int kMaxExpansionDepth = 4096;
constexpr size_t kMaxStacksPerSet = 1u << 14;
constexpr size_t kMaxMemoEntries = 1u << 20;

uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

void sort_unique(StackSet& s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

}  // namespace

ParseStacks::ParseStacks(const Grammar& grammar, size_t max_nodes) : grammar_(grammar), max_nodes_(max_nodes) {
  nodes_.push_back({kNoPosition, kEmpty});  // kEmpty
  nodes_.push_back({kNoPosition, kEmpty});  // kExit
}

uint32_t ParseStacks::push(uint32_t below, uint32_t position) {
  auto [it, inserted] = index_.emplace(pair_key(below, position), uint32_t(nodes_.size()));
  if (inserted) {
    if (nodes_.size() >= max_nodes_) {
      index_.erase(it);
      throw GrammarError("the output constraint's parser state grew beyond " + std::to_string(max_nodes_) + " stack nodes");
    }
    nodes_.push_back({position, below});
  }
  return it->second;
}

StackSet ParseStacks::initial() {
  StackSet out;
  expanded_.clear();
  for (uint32_t start : grammar_.alternatives[grammar_.root]) expand(kEmpty, start, out);
  sort_unique(out);
  return out;
}

uint32_t ParseStacks::start_at(uint32_t position) { return push(kExit, position); }

void ParseStacks::expand(uint32_t below, uint32_t position, StackSet& out) {
  pending_.clear();
  pending_.push_back({below, position, 0});
  while (!pending_.empty()) {
    const PendingExpansion p = pending_.back();
    pending_.pop_back();
    if (p.depth > kMaxExpansionDepth) throw GrammarError("the output constraint nests deeper than " + std::to_string(kMaxExpansionDepth) + " rules");
    if (!expanded_.insert(pair_key(p.below, p.position)).second) continue;
    const Element& e = grammar_.elements[p.position];
    switch (e.kind) {
      case Element::Kind::kBytes:
        out.push_back(push(p.below, p.position));
        break;
      case Element::Kind::kEnd:
        // The alternative is done: continue where the caller left off.
        if (p.below == kEmpty || p.below == kExit) {
          out.push_back(p.below);
        } else {
          const Node caller = nodes_[p.below];
          pending_.push_back({caller.below, caller.position, p.depth + 1});
        }
        break;
      case Element::Kind::kCall: {
        // A call in tail position returns straight to our caller, so
        // repetition written as right recursion keeps the stack flat.
        const uint32_t next = p.position + 1;
        const uint32_t return_to = grammar_.elements[next].kind == Element::Kind::kEnd ? p.below : push(p.below, next);
        const auto& starts = grammar_.alternatives[e.value];
        for (auto it = starts.rbegin(); it != starts.rend(); ++it) pending_.push_back({return_to, *it, p.depth + 1});
        break;
      }
    }
    if (out.size() > kMaxStacksPerSet) throw GrammarError("the output constraint is too ambiguous (over " + std::to_string(kMaxStacksPerSet) + " parses at once)");
  }
}

const StackSet& ParseStacks::advance_one(uint32_t stack, uint8_t byte) {
  if (results_.size() >= kMaxMemoEntries) {
    memo_.clear();
    results_.clear();
  }
  const uint64_t key = (uint64_t(stack) << 8) | byte;
  if (auto found = memo_.find(key); found != memo_.end()) return results_[found->second];
  memo_.emplace(key, uint32_t(results_.size()));
  StackSet out;
  if (stack != kEmpty && stack != kExit) {
    const Node n = nodes_[stack];
    const Element& e = grammar_.elements[n.position];
    if (grammar_.byte_sets[e.value].has(byte)) {
      expanded_.clear();
      expand(n.below, n.position + 1, out);
      sort_unique(out);
    }
  }
  results_.push_back(std::move(out));
  return results_.back();
}

void ParseStacks::advance(const StackSet& in, uint8_t byte, StackSet& out) {
  if (in.size() > budget_) throw GrammarError("the output constraint needs more parser work than one step may take");
  budget_ -= in.size();
  out.clear();
  if (in.size() == 1) {
    out = advance_one(in[0], byte);
    return;
  }
  for (uint32_t s : in) {
    const StackSet& next = advance_one(s, byte);
    out.insert(out.end(), next.begin(), next.end());
  }
  sort_unique(out);
}

}  // namespace tessera::grammar
