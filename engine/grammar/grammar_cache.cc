#include "engine/grammar/grammar_cache.h"

#include "engine/grammar/gbnf_parser.h"

namespace tessera::grammar {

GrammarCache::GrammarCache(std::function<std::vector<std::string>()> vocabulary, size_t capacity)
    : vocabulary_(std::move(vocabulary)), capacity_(capacity) {}

std::shared_ptr<CompiledGrammar> GrammarCache::get(const std::string& gbnf, const std::shared_ptr<const PreparedGrammar>& prepared) {
  if (auto found = index_.find(gbnf); found != index_.end()) {
    entries_.splice(entries_.end(), entries_, found->second);
    return found->second->second;
  }
  // The vocabulary a prepared grammar came with is this model's too: the
  // loop need not build its own.
  if (!vocab_) vocab_ = prepared && prepared->vocab ? prepared->vocab : std::make_shared<const TokenVocabulary>(vocabulary_());
  auto compiled = prepared ? std::make_shared<CompiledGrammar>(*prepared, vocab_)
                           : std::make_shared<CompiledGrammar>(parse_gbnf(gbnf), vocab_, CompiledGrammarLimits{}, tables_);
  if (entries_.size() >= capacity_) {
    index_.erase(entries_.front().first);
    entries_.pop_front();
  }
  entries_.emplace_back(gbnf, compiled);
  index_[gbnf] = std::prev(entries_.end());
  return compiled;
}

void GrammarCache::forget(const std::string& gbnf) {
  auto found = index_.find(gbnf);
  if (found == index_.end()) return;
  entries_.erase(found->second);
  index_.erase(found);
}

}  // namespace tessera::grammar
