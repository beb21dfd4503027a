#pragma once
// Code point ranges as UTF-8 byte sequences: a class of characters becomes
// alternatives of byte-range sequences, so the grammar works on bytes and
// accepts tokens that split a character.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::grammar {

using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;  // one [lo, hi] per byte

// Calls `emit` with byte-range sequences that together encode exactly the
// scalar values in [lo, hi] (surrogates left out).
void utf8_sequences(uint32_t lo, uint32_t hi, const std::function<void(const ByteRangeSequence&)>& emit);

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

}  // namespace tessera::grammar
