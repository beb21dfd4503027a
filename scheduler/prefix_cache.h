#pragma once
// Which KV pages hold which prompt prefixes. A full page is keyed by a
// 128-bit hash of every token from the start of the sequence to the page's
// end, and its own tokens are kept to check a hit, so a page is found only
// for exactly the prefix it was computed for. Pure bookkeeping.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace tessera {

struct PrefixKey {
  uint64_t a = 0, b = 0;
  bool operator==(const PrefixKey&) const = default;
};

// The key of a page given the key of the page before it (zero for the first).
PrefixKey chain_prefix_key(const PrefixKey& previous, std::span<const int32_t> page_tokens);

class PrefixCache {
 public:
  std::optional<int32_t> find(const PrefixKey& key, std::span<const int32_t> page_tokens) const;
  // Records `page` for `key` unless the key already has a page; returns
  // whether `page` is now the cached page for it.
  bool insert(const PrefixKey& key, std::span<const int32_t> page_tokens, int32_t page);
  // Forgets `page` (it is being reused for something else).
  void erase(int32_t page);
  bool contains(int32_t page) const { return by_page_.count(page) != 0; }

 private:
  struct KeyHash {
    size_t operator()(const PrefixKey& k) const { return size_t(k.a ^ (k.b * 0x9e3779b97f4a7c15ull)); }
  };
  struct Entry {
    PrefixKey key;
    std::vector<int32_t> tokens;
  };
  std::unordered_map<PrefixKey, int32_t, KeyHash> by_key_;
  std::unordered_map<int32_t, Entry> by_page_;
};

}  // namespace tessera
