#pragma once
// Output grammars prepared where they cannot stall other clients: off the
// model loop, on a thread of lower CPU priority than it (low_priority.h),
// at most `max_concurrent_compiles` at once per model, each within a
// CPU-time budget, and with every byte-set position's token table built,
// so the model loop receives a grammar it need not parse or walk the
// vocabulary for. Outcomes, refusals included, are kept by the SHA-256 of
// the request's constraint and of the grammar text it lowers to: a repeated
// schema costs a hash, on the lower-priority thread.
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
  struct Compiled {
    std::string gbnf;
    std::shared_ptr<const grammar::PreparedGrammar> prepared;
  };

  // `vocabulary` gives the model's token texts (grammar::tokenizer_texts),
  // called once, on the first compilation.
  // With `cache`, the vocabulary's position tables are also kept there
  // across starts (grammar::TableStore::persist_to).
  GrammarCompiler(std::function<std::vector<std::string>()> vocabulary, const StructuredOutputConfig& config,
                  std::shared_ptr<const ArtifactCache> cache = nullptr);

  // The grammar `lower` writes for a constraint that `identity` names (any
  // text equal for equal constraints), with its tables. ApiError 400
  // naming `param` when it does not lower or compile or needs more than
  // the budget (a 400 `lower` throws is passed on, and kept too); 429
  // (retry later) when this model's compilation slots are all taken.
  Compiled compile(const std::function<std::string()>& identity, const std::function<std::string()>& lower,
                   const std::string& param);
  // The same for grammar text as it is.
  Compiled compile_text(const std::string& gbnf, const std::string& param);

  size_t compilations() const { return compilations_.load(); }  // grammars compiled (cache misses) so far

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Outcome {
    Compiled compiled;  // prepared is null when refused
    int status = 200;
    std::string error;  // the refusal's message
    std::string param;  // a lowering refusal's field (it names its own); empty: the grammar's
  };

  std::shared_ptr<const Outcome> cached(const Digest& key);
  void remember(const Digest& key, const std::shared_ptr<const Outcome>& outcome);
  std::shared_ptr<const Outcome> find_or_build(const std::function<std::string()>& identity,
                                               const std::function<std::string()>& lower);
  Outcome build(std::string gbnf, double cpu_spent);
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary();

  std::function<std::vector<std::string>()> vocabulary_source_;
  StructuredOutputConfig config_;
  std::shared_ptr<const ArtifactCache> cache_;
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
