#pragma once
// Compiled grammars of one vocabulary, by grammar text: requests with the
// same schema share the compiled form and the token masks it has learnt.
// Used from one thread (the model loop's).
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/grammar/compiled_grammar.h"

namespace tessera::grammar {

class GrammarCache {
 public:
  // `vocabulary` builds the token texts the first time a grammar is compiled.
  GrammarCache(std::function<std::vector<std::string>()> vocabulary, size_t capacity = 32);

  // Throws GrammarError when the text does not compile. With `prepared`
  // (the same text, compiled on a request thread) nothing is parsed or
  // walked here.
  std::shared_ptr<CompiledGrammar> get(const std::string& gbnf, const std::shared_ptr<const PreparedGrammar>& prepared = nullptr);
  // Drops a grammar that failed (too much work or state), so its memory goes
  // with the last sequence using it and the next request starts afresh.
  void forget(const std::string& gbnf);

 private:
  std::function<std::vector<std::string>()> vocabulary_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::shared_ptr<TableStore> tables_ = std::make_shared<TableStore>();
  size_t capacity_;
  std::list<std::pair<std::string, std::shared_ptr<CompiledGrammar>>> entries_;  // least recently used first
  std::unordered_map<std::string, decltype(entries_)::iterator> index_;
};

}  // namespace tessera::grammar
