#pragma once
// What a byte-set position allows of the vocabulary whatever lies below it
// on the stack, and a store that shares these tables between grammars: two
// positions that reach the same sub-grammar (the string body of every JSON
// schema, say) walk the vocabulary the same way, so the walk is done once
// per vocabulary rather than once per schema.
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/io/artifact_cache.h"
#include "engine/grammar/token_vocabulary.h"

namespace tessera::grammar {

struct PositionTable {
  std::vector<int32_t> accepted_ids;  // when few
  TokenMask accepted;                 // when many (dense)
  bool dense = false;
  // Tokens that leave the position's rule with bytes left, in vocabulary
  // byte order, and their bytes front-coded for checking them all against
  // a stack in one walk: token i repeats the first context_shared[i] bytes
  // of token i - 1 and adds context_suffixes[context_suffix_end[i - 1],
  // context_suffix_end[i]).
  std::vector<int32_t> context_dependent;
  std::vector<uint32_t> context_shared;
  std::vector<uint32_t> context_suffix_end;
  std::string context_suffixes;
};

// Fills the front-coded fields from `table.context_dependent`.
void front_code_context_tokens(const TokenVocabulary& vocab, PositionTable& table);

// The sub-grammar a position reaches (the rest of its alternative and every
// rule it can call), written with rules numbered by first use: equal for
// positions whose token walks are equal. Empty when longer than `max_bytes`
// (such positions are not shared).
std::string reachable_form(const Grammar& grammar, uint32_t position, size_t max_bytes);

// Tables by reachable form, least recently used dropped past `capacity`.
// One vocabulary per store; safe to share between threads (request threads
// compile grammars into the same store). With persist_to(), tables also go
// to an artifact cache and a form missing here is looked up there, so a
// vocabulary's common tables are walked once across starts.
class TableStore {
 public:
  explicit TableStore(size_t capacity = 4096) : capacity_(capacity) {}
  // `vocab_digest` names the vocabulary (a content hash of its token
  // texts); `vocab_size` bounds the ids a stored table may hold.
  void persist_to(std::shared_ptr<const ArtifactCache> cache, std::string vocab_digest, size_t vocab_size);
  std::shared_ptr<const PositionTable> find(const std::string& form);
  void insert(const std::string& form, std::shared_ptr<const PositionTable> table);
  size_t size() const;
  size_t loaded_from_cache() const;  // tables read back from the artifact cache

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const PositionTable>>;
  std::string cache_key(const std::string& form) const;  // mutex_ held
  void remember(const std::string& form, std::shared_ptr<const PositionTable> table);  // mutex_ held

  mutable std::mutex mutex_;
  size_t capacity_;
  std::shared_ptr<const ArtifactCache> cache_;
  std::string vocab_digest_;
  size_t vocab_size_ = 0;
  size_t loaded_from_cache_ = 0;
  std::list<Entry> entries_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace tessera::grammar
