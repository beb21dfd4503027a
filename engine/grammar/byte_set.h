#pragma once
// A set of byte values: what one grammar element accepts.
#include <array>
#include <cstdint>

namespace tessera::grammar {

class ByteSet {
 public:
  void add(uint8_t b) { bits_[b >> 6] |= uint64_t(1) << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(uint8_t(b));
  }
  bool has(uint8_t b) const { return (bits_[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) == 0; }
  void merge(const ByteSet& other) {
    for (int i = 0; i < 4; ++i) bits_[size_t(i)] |= other.bits_[size_t(i)];
  }
  bool operator==(const ByteSet&) const = default;
  const std::array<uint64_t, 4>& words() const { return bits_; }

 private:
  std::array<uint64_t, 4> bits_{};
};

}  // namespace tessera::grammar
