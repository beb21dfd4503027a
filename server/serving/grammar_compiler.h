#pragma once
// Output grammars compiled where they cannot stall other clients: on the
// request's own thread (at a lower CPU priority than the model loop), at
// most `max_concurrent_compiles` at once per model, each within a CPU-time
// budget, with every byte-set position's token table built, so the model
// loop receives a grammar it need not parse or walk the vocabulary for.
// Results, refusals included, are kept by the SHA-256 of the grammar text:
// a repeated schema costs a hash.
#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/grammar/compiled_grammar.h"

namespace tessera {

class GrammarCompiler {
 public:
  // `vocabulary` gives the model's token texts (grammar::tokenizer_texts),
  // called once, on the first compilation.
  GrammarCompiler(std::function<std::vector<std::string>()> vocabulary, const StructuredOutputConfig& config);

  // The grammar with its tables. ApiError 400 naming `param` when it does
  // not compile or needs more than the budget; 429 (retry later) when this
  // model's compilation slots are all taken.
  std::shared_ptr<const grammar::PreparedGrammar> compile(const std::string& gbnf, const std::string& param);

  size_t compilations() const { return compilations_.load(); }  // cache misses so far

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Outcome {
    std::shared_ptr<const grammar::PreparedGrammar> prepared;
    std::string error;  // the refusal, when not prepared
  };

  std::shared_ptr<const Outcome> cached(const Digest& key);
  void remember(const Digest& key, std::shared_ptr<const Outcome> outcome);
  // Runs on a thread of its own (lowered priority); never throws.
  Outcome build(const std::string& gbnf);
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary();

  std::function<std::vector<std::string>()> vocabulary_source_;
  StructuredOutputConfig config_;
  std::once_flag vocab_once_;
  std::shared_ptr<const grammar::TokenVocabulary> vocab_;
  std::shared_ptr<grammar::TableStore> tables_ = std::make_shared<grammar::TableStore>();
  std::atomic<int> running_{0};
  std::atomic<size_t> compilations_{0};
  std::mutex mutex_;  // guards the cache
  std::list<std::pair<Digest, std::shared_ptr<const Outcome>>> entries_;  // least recently used first
  std::map<Digest, decltype(entries_)::iterator> index_;
};

}  // namespace tessera
