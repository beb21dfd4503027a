#include "engine/grammar/position_table_codec.h"

#include <algorithm>

#include "engine/io/byte_codec.h"

namespace tessera::grammar {
namespace {

constexpr uint32_t kVersion = 1;

bool ids_in_range(const std::vector<int32_t>& ids, size_t vocab_size) {
  return std::all_of(ids.begin(), ids.end(), [&](int32_t id) { return id >= 0 && size_t(id) < vocab_size; });
}

}  // namespace

std::string encode_position_table(const PositionTable& t) {
  ByteWriter out;
  out.put<uint32_t>(kVersion);
  out.put<uint8_t>(t.dense);
  out.put_array(t.accepted_ids);
  out.put_array(t.accepted.words());
  out.put_array(t.context_dependent);
  out.put_array(t.context_shared);
  out.put_array(t.context_suffix_end);
  out.put_string(t.context_suffixes);
  return out.take();
}

PositionTable decode_position_table(const std::string& bytes, size_t vocab_size) {
  try {
    ByteReader r(bytes, "cached grammar table");
    if (r.get<uint32_t>() != kVersion) r.fail("unknown version");
    PositionTable t;
    t.dense = r.get<uint8_t>() != 0;
    t.accepted_ids = r.get_array<int32_t>();
    std::vector<uint64_t> words = r.get_array<uint64_t>();
    t.context_dependent = r.get_array<int32_t>();
    t.context_shared = r.get_array<uint32_t>();
    t.context_suffix_end = r.get_array<uint32_t>();
    t.context_suffixes = r.get_string();
    if (!r.done()) r.fail("bytes after the end");
    const size_t n = t.context_dependent.size();
    if (!ids_in_range(t.accepted_ids, vocab_size) || !ids_in_range(t.context_dependent, vocab_size)) r.fail("a token id out of range");
    if (!words.empty() && words.size() != (vocab_size + 63) / 64) r.fail("its mask is not the vocabulary's size");
    if (t.context_shared.size() != n || t.context_suffix_end.size() != n ||
        !std::is_sorted(t.context_suffix_end.begin(), t.context_suffix_end.end()) ||
        (n > 0 && t.context_suffix_end.back() != t.context_suffixes.size())) {
      r.fail("its front-coded tokens are inconsistent");
    }
    // Each token repeats at most the whole of the one before it.
    uint64_t previous_length = 0;
    for (size_t i = 0; i < n; ++i) {
      if (t.context_shared[i] > previous_length) r.fail("a front-coded token repeats more than there was");
      previous_length = uint64_t(t.context_shared[i]) + t.context_suffix_end[i] - (i > 0 ? t.context_suffix_end[i - 1] : 0);
    }
    t.accepted = TokenMask::from_words(std::move(words));
    return t;
  } catch (const GrammarError&) {
    throw;
  } catch (const Error& e) {
    throw GrammarError(e.what());
  }
}

}  // namespace tessera::grammar
