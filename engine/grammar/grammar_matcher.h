#pragma once
// One sequence's place in its output constraint. Masks the logits of each
// step to the tokens that keep the output valid and follows each drawn
// token. End-of-generation tokens are allowed once the grammar has matched
// in full; when no token at all can continue (a grammar the vocabulary
// cannot spell), only they are, so the sequence ends instead of stalling.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/grammar/compiled_grammar.h"

namespace tessera::grammar {

class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<CompiledGrammar> grammar, std::vector<int32_t> end_tokens);

  // True when `token` may come next.
  bool allows(int32_t token);
  // Follows a drawn token; false (and no change) when it was not allowed.
  bool advance(int32_t token);
  // Sets the logits of every token that may not come next to -infinity.
  void mask_logits(std::span<float> logits);
  // The grammar has matched in full (end tokens are allowed).
  bool complete() const;
  // Nothing but an end token can come next.
  bool finished();

 private:
  bool is_end(int32_t token) const;

  std::shared_ptr<CompiledGrammar> grammar_;
  std::vector<int32_t> end_tokens_;
  StackSet state_;
  int32_t checked_token_ = -1;  // the last token allows() checked, and the state after it
  StackSet checked_next_;
};

}  // namespace tessera::grammar
