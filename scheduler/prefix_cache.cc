#include "scheduler/prefix_cache.h"

#include <algorithm>

namespace tessera {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

PrefixKey chain_prefix_key(const PrefixKey& previous, std::span<const int32_t> page_tokens) {
  PrefixKey k{mix(previous.a ^ 0x243f6a8885a308d3ull), mix(previous.b ^ 0x13198a2e03707344ull)};
  for (int32_t t : page_tokens) {
    k.a = mix(k.a ^ uint64_t(uint32_t(t)));
    k.b = mix(k.b + uint64_t(uint32_t(t)) * 0xa4093822299f31d1ull);
  }
  return k;
}

std::optional<int32_t> PrefixCache::find(const PrefixKey& key, std::span<const int32_t> page_tokens) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  const Entry& e = by_page_.at(it->second);
  if (!std::equal(e.tokens.begin(), e.tokens.end(), page_tokens.begin(), page_tokens.end())) return std::nullopt;
  return it->second;
}

bool PrefixCache::insert(const PrefixKey& key, std::span<const int32_t> page_tokens, int32_t page) {
  if (by_key_.count(key) || by_page_.count(page)) return by_page_.count(page) && by_page_.at(page).key == key;
  by_key_[key] = page;
  by_page_[page] = Entry{key, std::vector<int32_t>(page_tokens.begin(), page_tokens.end())};
  return true;
}

void PrefixCache::erase(int32_t page) {
  auto it = by_page_.find(page);
  if (it == by_page_.end()) return;
  by_key_.erase(it->second.key);
  by_page_.erase(it);
}

}  // namespace tessera
