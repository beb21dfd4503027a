#pragma once
// A context-free grammar over bytes: the one form every output constraint
// (JSON schema, regex, choice list, GBNF text) is lowered to. A rule is a
// list of alternatives; an alternative is a sequence of elements, each a
// byte set or a call of a rule. The layout is flat: every alternative is a
// run of elements closed by kEnd, so a parser position is one index into
// `elements`.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/error.h"
#include "engine/grammar/byte_set.h"

namespace tessera::grammar {

// A grammar that cannot be built or would cost too much; the message names
// the rule or construct.
class GrammarError : public Error {
 public:
  using Error::Error;
};

// How a sequence's error begins when its output grammar failed: the
// client's grammar, so front ends answer it as the client's error.
inline constexpr const char* kOutputGrammarErrorPrefix = "output grammar: ";

struct Element {
  enum class Kind : uint8_t { kBytes, kCall, kEnd };
  Kind kind = Kind::kEnd;
  uint32_t value = 0;  // kBytes: index into byte_sets; kCall: rule id
};

struct GrammarLimits {
  size_t max_elements = 1u << 18;
  size_t max_rules = 1u << 15;
};

struct Grammar {
  std::vector<ByteSet> byte_sets;
  std::vector<Element> elements;
  std::vector<std::vector<uint32_t>> alternatives;  // [rule] -> first element of each alternative
  std::vector<std::string> rule_names;
  uint32_t root = 0;
};

// Collects rules by name, then checks and freezes them.
class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {}) : limits_(limits) {}

  // The id of the rule named `name`, declared on first use.
  uint32_t rule(const std::string& name);
  // A new rule with a name no grammar text can write.
  uint32_t fresh_rule(const std::string& hint);
  bool defined(uint32_t rule) const { return !grammar_.alternatives[rule].empty(); }
  void add_alternative(uint32_t rule, const std::vector<Element>& sequence);
  Element bytes(const ByteSet& set);
  static Element call(uint32_t rule) { return {Element::Kind::kCall, rule}; }

  // Checks that every called rule is defined and that no rule can call
  // itself before consuming a byte (left recursion), then returns the
  // grammar rooted at `root`.
  Grammar finish(uint32_t root);

 private:
  void check_left_recursion() const;
  std::vector<bool> nullable_rules() const;

  GrammarLimits limits_;
  Grammar grammar_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::map<std::array<uint64_t, 4>, uint32_t> set_index_;
  size_t fresh_count_ = 0;
};

}  // namespace tessera::grammar
