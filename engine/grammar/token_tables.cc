#include "engine/grammar/token_tables.h"

#include <algorithm>

namespace tessera::grammar {

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

std::shared_ptr<const PositionTable> TableStore::find(const std::string& form) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(form);
  if (found == index_.end()) return nullptr;
  entries_.splice(entries_.end(), entries_, found->second);
  return found->second->second;
}

size_t TableStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void TableStore::insert(const std::string& form, std::shared_ptr<const PositionTable> table) {
  std::lock_guard lock(mutex_);
  if (index_.count(form)) return;
  if (entries_.size() >= capacity_) {
    index_.erase(entries_.front().first);
    entries_.pop_front();
  }
  entries_.emplace_back(form, std::move(table));
  index_[form] = std::prev(entries_.end());
}

}  // namespace tessera::grammar
