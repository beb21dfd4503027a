#include "models/tokenizer/unicode_nfc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/core/unicode.h"

namespace tessera::unicode {
namespace {

struct CombiningClass {
  char32_t cp;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint32_t first, count;
};
struct Composition {
  char32_t first, second, composite;
};

#include "models/tokenizer/unicode_nfc_tables.inc"

// Hangul syllables compose and decompose by arithmetic (Unicode §3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t cp) {
  const auto* end = std::end(kCombiningClasses);
  const auto* it = std::lower_bound(std::begin(kCombiningClasses), end, cp,
                                    [](const CombiningClass& c, char32_t v) { return c.cp < v; });
  return it != end && it->cp == cp ? it->ccc : 0;
}

void decompose(char32_t cp, std::u32string* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = std::end(kDecompositions);
  const auto* it = std::lower_bound(std::begin(kDecompositions), end, cp,
                                    [](const Decomposition& d, char32_t v) { return d.cp < v; });
  if (it == end || it->cp != cp) {
    out->push_back(cp);
    return;
  }
  out->append(kDecompositionData + it->first, it->count);
}

// The composite of a starter and a following character, or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto* end = std::end(kCompositions);
  const auto* it = std::lower_bound(std::begin(kCompositions), end, std::pair{first, second},
                                    [](const Composition& c, const std::pair<char32_t, char32_t>& v) {
                                      return c.first < v.first || (c.first == v.first && c.second < v.second);
                                    });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

// Canonical ordering: each run of non-starters stably sorted by class.
void reorder(std::u32string& s, std::vector<uint8_t>& classes) {
  classes.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) classes[i] = combining_class(s[i]);
  std::vector<std::pair<uint8_t, char32_t>> run;
  for (size_t i = 0; i < s.size();) {
    if (classes[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    run.clear();
    for (; j < s.size() && classes[j] != 0; ++j) run.emplace_back(classes[j], s[j]);
    std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < run.size(); ++k) {
      classes[i + k] = run[k].first;
      s[i + k] = run[k].second;
    }
    i = j;
  }
}

// Canonical composition over the reordered decomposition, in place.
void recompose(std::u32string& s, const std::vector<uint8_t>& classes) {
  size_t out = 0, starter = 0;
  bool have_starter = false;
  int last_class = -1;  // class of the last character kept after the starter; -1: none yet
  for (size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    const uint8_t ccc = classes[i];
    const bool blocked = last_class != -1 && (last_class == 0 || last_class >= ccc);
    if (have_starter && !blocked) {
      if (const char32_t composite = compose(s[starter], c)) {
        s[starter] = composite;
        continue;
      }
    }
    if (ccc == 0) {
      starter = out;
      have_starter = true;
      last_class = -1;
    } else {
      last_class = ccc;
    }
    s[out++] = c;
  }
  s.resize(out);
}

}  // namespace

std::string to_nfc(std::string_view text) {
  const bool below_combining = std::all_of(text.begin(), text.end(), [](char c) { return uint8_t(c) < 0xCC; });
  if (below_combining) return std::string(text);
  std::u32string decomposed;
  decomposed.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) decompose(decode_utf8(text, &pos), &decomposed);
  std::vector<uint8_t> classes;
  reorder(decomposed, classes);
  recompose(decomposed, classes);
  return encode_utf8(decomposed);
}

}  // namespace tessera::unicode
