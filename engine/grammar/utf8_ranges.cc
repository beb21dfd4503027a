#include "engine/grammar/utf8_ranges.h"

#include "engine/core/unicode.h"

namespace tessera::grammar {
namespace {

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::vector<uint8_t> encode(uint32_t cp) {
  std::string s;
  unicode::append_utf8(cp, &s);
  return {s.begin(), s.end()};
}

// [lo, hi] share an encoded length.
void split_same_length(uint32_t lo, uint32_t hi, const std::function<void(const ByteRangeSequence&)>& emit) {
  const int n = encoded_length(lo);
  // Split until every trailing continuation byte spans its full range
  // wherever the leading bytes differ.
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t(1) << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, emit);
        split_same_length((lo | m) + 1, hi, emit);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, emit);
        split_same_length(hi & ~m, hi, emit);
        return;
      }
    }
  }
  const std::vector<uint8_t> a = encode(lo), b = encode(hi);
  ByteRangeSequence seq;
  for (size_t i = 0; i < a.size(); ++i) seq.emplace_back(a[i], b[i]);
  emit(seq);
}

}  // namespace

void utf8_sequences(uint32_t lo, uint32_t hi, const std::function<void(const ByteRangeSequence&)>& emit) {
  if (hi > kMaxCodePoint) hi = kMaxCodePoint;
  if (lo > hi) return;
  // Leave out the surrogates, then cut at the encoded-length boundaries.
  if (lo < 0xD800 && hi > 0xDFFF) {
    utf8_sequences(lo, 0xD7FF, emit);
    utf8_sequences(0xE000, hi, emit);
    return;
  }
  if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
  if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF;
  if (lo > hi) return;
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      split_same_length(lo, boundary, emit);
      utf8_sequences(boundary + 1, hi, emit);
      return;
    }
  }
  split_same_length(lo, hi, emit);
}

}  // namespace tessera::grammar
