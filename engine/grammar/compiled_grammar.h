#pragma once
// A grammar bound to a vocabulary: which tokens may come next in a parser
// state. For each byte-set position the tokens are sorted once into those
// the position accepts whatever lies below it on the stack, those it
// rejects, and the few (typically ones that close a string or object) that
// leave its rule and must be checked against the actual stack. A state's
// mask is then the union of its tops' accepted sets plus those checks, and
// is cached by state, so most steps cost a lookup.
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/parse_stacks.h"
#include "engine/grammar/state_cache.h"
#include "engine/grammar/token_tables.h"
#include "engine/grammar/token_vocabulary.h"

namespace tessera::grammar {

struct CompiledGrammarLimits {
  size_t max_stack_nodes = 1u << 20;
  // Parser work (stacks advanced by a byte) one mask may take, and one
  // token check; a string body's table takes a few million on a 152k vocabulary.
  uint64_t mask_budget = 1ull << 25;
  uint64_t token_budget = 1ull << 20;
  size_t cached_masks = 256;
  size_t max_shared_form_bytes = 1u << 16;  // larger reachable sub-grammars are not shared
  size_t walk_states = 4096;  // parser states one vocabulary walk keeps transitions for (1 KiB each)
};

// A grammar with the token table of every byte-set position built: what a
// request thread hands the engine, so the engine walks no vocabulary for
// it. Immutable, so any number of engines and threads may share it.
struct PreparedGrammar {
  Grammar grammar;
  std::vector<std::shared_ptr<const PositionTable>> tables;  // [element position]; null where not a byte set
  std::shared_ptr<const TokenVocabulary> vocab;              // the vocabulary the tables index
};

class CompiledGrammar {
 public:
  // `shared`: tables of other grammars of the same vocabulary (may be null).
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab, CompiledGrammarLimits limits = {},
                  std::shared_ptr<TableStore> shared = nullptr);
  // From a prepared grammar of the same vocabulary: its tables are used as built.
  CompiledGrammar(const PreparedGrammar& prepared, std::shared_ptr<const TokenVocabulary> vocab, CompiledGrammarLimits limits = {});

  const TokenVocabulary& vocab() const { return *vocab_; }
  StackSet initial() { return stacks_.initial(); }
  // The state after the token's bytes; empty when the token does not fit.
  StackSet advance(const StackSet& state, int32_t token);
  bool accepts(const StackSet& state, int32_t token) { return !advance(state, token).empty(); }
  // The tokens that may follow `state` (end-of-generation tokens aside).
  const TokenMask& allowed(const StackSet& state);
  // Positions whose token tables this grammar walked the vocabulary for,
  // and those it took from the shared store (for tests and reports).
  size_t tables_built() const { return tables_built_; }
  size_t tables_shared() const { return tables_shared_; }
  // Builds the tables of every position now rather than when first needed
  // (the most a request can spend on them). `after_each` runs after each
  // table (a budget check may throw from it).
  void build_all_tables(const std::function<void()>& after_each = {});
  // The grammar and its tables, for another thread's CompiledGrammar.
  std::shared_ptr<const PreparedGrammar> prepared() const;

 private:
  StackSet advance_bytes(const StackSet& state, int32_t token);
  void add_fitting(uint32_t stack, const PositionTable& table, StateCache& states, TokenMask& mask);
  const PositionTable& table(uint32_t position);
  std::shared_ptr<const PositionTable> build_table(uint32_t position);

  Grammar grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  CompiledGrammarLimits limits_;
  ParseStacks stacks_;
  std::shared_ptr<TableStore> shared_;
  std::vector<std::shared_ptr<const PositionTable>> tables_;  // [element position], once known
  size_t tables_built_ = 0;
  size_t tables_shared_ = 0;
  // For checking context-dependent tokens against real stacks; kept across
  // masks, since one mask's states recur in the next (a bounded string's
  // stack after k characters is reached again from k - 1).
  StateCache fit_states_;
  // Masks by state, least recently used first.
  std::list<std::pair<std::string, TokenMask>> masks_;
  std::unordered_map<std::string, std::list<std::pair<std::string, TokenMask>>::iterator> mask_index_;
  StackSet scratch_a_, scratch_b_;
};

}  // namespace tessera::grammar
