#include "engine/grammar/grammar.h"

#include <functional>

namespace tessera::grammar {

uint32_t GrammarBuilder::rule(const std::string& name) {
  auto found = by_name_.find(name);
  if (found != by_name_.end()) return found->second;
  if (grammar_.alternatives.size() >= limits_.max_rules) {
    throw GrammarError("the grammar has more than " + std::to_string(limits_.max_rules) + " rules");
  }
  const uint32_t id = uint32_t(grammar_.alternatives.size());
  grammar_.alternatives.emplace_back();
  grammar_.rule_names.push_back(name);
  by_name_.emplace(name, id);
  return id;
}

uint32_t GrammarBuilder::fresh_rule(const std::string& hint) {
  // '#' cannot appear in a rule name of grammar text.
  return rule(hint + "#" + std::to_string(fresh_count_++));
}

void GrammarBuilder::add_alternative(uint32_t rule, const std::vector<Element>& sequence) {
  if (grammar_.elements.size() + sequence.size() + 1 > limits_.max_elements) {
    throw GrammarError("the grammar has more than " + std::to_string(limits_.max_elements) + " elements");
  }
  grammar_.alternatives[rule].push_back(uint32_t(grammar_.elements.size()));
  for (const Element& e : sequence) {
    if (e.kind == Element::Kind::kEnd) throw GrammarError("internal: an end marker inside an alternative");
    grammar_.elements.push_back(e);
  }
  grammar_.elements.push_back({Element::Kind::kEnd, 0});
}

Element GrammarBuilder::bytes(const ByteSet& set) {
  auto [it, inserted] = set_index_.emplace(set.words(), uint32_t(grammar_.byte_sets.size()));
  if (inserted) grammar_.byte_sets.push_back(set);
  return {Element::Kind::kBytes, it->second};
}

Grammar GrammarBuilder::finish(uint32_t root) {
  for (size_t i = 0; i < grammar_.elements.size(); ++i) {
    const Element& e = grammar_.elements[i];
    if (e.kind == Element::Kind::kCall && !defined(e.value)) {
      throw GrammarError("the rule '" + grammar_.rule_names[e.value] + "' is used but never defined");
    }
  }
  if (root >= grammar_.alternatives.size() || !defined(root)) throw GrammarError("the grammar has no root rule");
  grammar_.root = root;
  check_left_recursion();
  return std::move(grammar_);
}

// Rules that can match the empty string, by propagation from the rules
// with an empty alternative: each alternative counts the calls it still
// waits on, and each rule found nullable decrements the alternatives that
// call it. Every element is visited a bounded number of times, so the cost
// is linear in the grammar (a fixed point re-scanning every rule per new
// nullable rule is quadratic on a chain of them).
std::vector<bool> GrammarBuilder::nullable_rules() const {
  const Grammar& g = grammar_;
  const size_t n = g.alternatives.size();
  std::vector<uint32_t> alt_rule;     // [alternative] -> its rule
  std::vector<uint32_t> waiting;      // [alternative] -> calls not yet known nullable; kNever when it holds bytes
  std::vector<std::vector<uint32_t>> callers(n);  // [rule] -> alternatives calling it (once per call)
  constexpr uint32_t kNever = UINT32_MAX;
  std::vector<bool> nullable(n, false);
  std::vector<uint32_t> ready;
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t start : g.alternatives[r]) {
      const uint32_t alt = uint32_t(alt_rule.size());
      alt_rule.push_back(uint32_t(r));
      uint32_t count = 0;
      for (uint32_t p = start; g.elements[p].kind != Element::Kind::kEnd; ++p) {
        if (g.elements[p].kind == Element::Kind::kBytes) {
          count = kNever;
          break;
        }
        ++count;
      }
      waiting.push_back(count);
      if (count == kNever) continue;
      for (uint32_t p = start; g.elements[p].kind != Element::Kind::kEnd; ++p) callers[g.elements[p].value].push_back(alt);
      if (count == 0 && !nullable[r]) {
        nullable[r] = true;
        ready.push_back(uint32_t(r));
      }
    }
  }
  while (!ready.empty()) {
    const uint32_t r = ready.back();
    ready.pop_back();
    for (uint32_t alt : callers[r]) {
      if (--waiting[alt] != 0) continue;
      const uint32_t owner = alt_rule[alt];
      if (!nullable[owner]) {
        nullable[owner] = true;
        ready.push_back(owner);
      }
    }
  }
  return nullable;
}

// A rule calls another "on the left" when the call can come before any byte
// is consumed. A cycle of such calls would make the parser expand forever.
void GrammarBuilder::check_left_recursion() const {
  const Grammar& g = grammar_;
  const size_t n = g.alternatives.size();
  const std::vector<bool> nullable = nullable_rules();
  std::vector<std::vector<uint32_t>> left_calls(n);
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t start : g.alternatives[r]) {
      for (uint32_t p = start; g.elements[p].kind == Element::Kind::kCall; ++p) {
        left_calls[r].push_back(g.elements[p].value);
        if (!nullable[g.elements[p].value]) break;
      }
    }
  }
  // Iterative depth-first search for a cycle (colors: 0 new, 1 open, 2 done).
  std::vector<uint8_t> color(n, 0);
  for (size_t start = 0; start < n; ++start) {
    if (color[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{uint32_t(start), 0}};
    color[start] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == left_calls[r].size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t callee = left_calls[r][next++];
      if (color[callee] == 1) {
        throw GrammarError("the rule '" + g.rule_names[callee] + "' can call itself before matching anything (left recursion)");
      }
      if (color[callee] == 0) {
        color[callee] = 1;
        stack.emplace_back(callee, 0);
      }
    }
  }
}

}  // namespace tessera::grammar
