#pragma once
// SHA-256 over pieces fed in turn, as lowercase hex: the content keys of
// the artifact cache. Each piece is length-prefixed, so ("ab", "c") and
// ("a", "bc") hash differently.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tessera {

class ContentHash {
 public:
  ContentHash();
  ~ContentHash();
  ContentHash(const ContentHash&) = delete;
  ContentHash& operator=(const ContentHash&) = delete;

  ContentHash& add(const void* data, size_t bytes);
  ContentHash& add(std::string_view text) { return add(text.data(), text.size()); }
  ContentHash& add_number(int64_t value) { return add(&value, sizeof(value)); }
  std::string hex();  // once; the hash is spent after

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// SHA-256 of `bytes` as 32 raw bytes.
std::string sha256_raw(const void* data, size_t bytes);

}  // namespace tessera
