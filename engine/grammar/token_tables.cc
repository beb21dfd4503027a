#include "engine/grammar/token_tables.h"

#include <algorithm>

#include "engine/grammar/position_table_codec.h"
#include "engine/io/content_hash.h"

namespace tessera::grammar {
namespace {

// The artifact cache's kind for position tables.
constexpr const char* kTableArtifact = "grammar-table";

}  // namespace

std::string reachable_form(const Grammar& grammar, uint32_t position, size_t max_bytes) {
  std::string form;
  std::unordered_map<uint32_t, uint32_t> numbered;  // rule -> number by first use
  std::vector<uint32_t> rules;
  auto put_u32 = [&](uint32_t v) { form.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto put_run = [&](uint32_t start) {
    for (uint32_t p = start;; ++p) {
      const Element& e = grammar.elements[p];
      if (e.kind == Element::Kind::kEnd) {
        form += 'E';
        return;
      }
      if (e.kind == Element::Kind::kBytes) {
        form += 'B';
        for (uint64_t w : grammar.byte_sets[e.value].words()) form.append(reinterpret_cast<const char*>(&w), sizeof w);
      } else {
        auto [it, fresh] = numbered.emplace(e.value, uint32_t(numbered.size()));
        if (fresh) rules.push_back(e.value);
        form += 'C';
        put_u32(it->second);
      }
    }
  };
  put_run(position);
  for (size_t i = 0; i < rules.size(); ++i) {
    if (form.size() > max_bytes) return {};
    form += 'R';
    for (uint32_t start : grammar.alternatives[rules[i]]) put_run(start);
  }
  return form.size() > max_bytes ? std::string() : form;
}

void front_code_context_tokens(const TokenVocabulary& vocab, PositionTable& table) {
  const std::string* previous = nullptr;
  for (int32_t id : table.context_dependent) {
    const std::string& bytes = vocab.text(id);
    size_t shared = 0;
    if (previous) {
      const size_t n = std::min(previous->size(), bytes.size());
      while (shared < n && (*previous)[shared] == bytes[shared]) ++shared;
    }
    table.context_shared.push_back(uint32_t(shared));
    table.context_suffixes.append(bytes, shared, std::string::npos);
    table.context_suffix_end.push_back(uint32_t(table.context_suffixes.size()));
    previous = &bytes;
  }
}

void TableStore::persist_to(std::shared_ptr<const ArtifactCache> cache, std::string vocab_digest, size_t vocab_size) {
  std::lock_guard lock(mutex_);
  cache_ = std::move(cache);
  vocab_digest_ = std::move(vocab_digest);
  vocab_size_ = vocab_size;
}

std::string TableStore::cache_key(const std::string& form) const {
  return ContentHash().add(kTableArtifact).add(vocab_digest_).add(form).hex();
}

std::shared_ptr<const PositionTable> TableStore::find(const std::string& form) {
  std::shared_ptr<const ArtifactCache> cache;
  std::string key;
  size_t vocab_size = 0;
  {
    std::lock_guard lock(mutex_);
    auto found = index_.find(form);
    if (found != index_.end()) {
      entries_.splice(entries_.end(), entries_, found->second);
      return found->second->second;
    }
    if (!cache_) return nullptr;
    cache = cache_;
    key = cache_key(form);
    vocab_size = vocab_size_;
  }
  // The file is read without the lock: other compilations go on meanwhile.
  const std::optional<std::string> bytes = cache->load(kTableArtifact, key);
  if (!bytes) return nullptr;
  std::shared_ptr<const PositionTable> table;
  try {
    table = std::make_shared<const PositionTable>(decode_position_table(*bytes, vocab_size));
  } catch (const GrammarError&) {
    return nullptr;  // walked again and stored anew
  }
  std::lock_guard lock(mutex_);
  if (!index_.count(form)) remember(form, table);
  ++loaded_from_cache_;
  return table;
}

size_t TableStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

size_t TableStore::loaded_from_cache() const {
  std::lock_guard lock(mutex_);
  return loaded_from_cache_;
}

void TableStore::insert(const std::string& form, std::shared_ptr<const PositionTable> table) {
  std::shared_ptr<const ArtifactCache> cache;
  std::string key;
  {
    std::lock_guard lock(mutex_);
    if (index_.count(form)) return;
    remember(form, table);
    if (!cache_) return;
    cache = cache_;
    key = cache_key(form);
  }
  // Written without the lock: other compilations go on meanwhile.
  cache->store(kTableArtifact, key, encode_position_table(*table));
}

void TableStore::remember(const std::string& form, std::shared_ptr<const PositionTable> table) {
  if (entries_.size() >= capacity_) {
    index_.erase(entries_.front().first);
    entries_.pop_front();
  }
  entries_.emplace_back(form, std::move(table));
  index_[form] = std::prev(entries_.end());
}

}  // namespace tessera::grammar
