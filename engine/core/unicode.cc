#include "engine/core/unicode.h"

#include <algorithm>

namespace tessera::unicode {
namespace {

struct CategoryRange {
  char32_t first;
  char32_t last;
  Category category;
};

struct LowercasePair {
  char32_t cp;
  char32_t lower;
};

#include "engine/core/unicode_tables.inc"

}  // namespace

Category category(char32_t cp) {
  const auto* end = std::end(kCategoryRanges);
  const auto* it = std::upper_bound(std::begin(kCategoryRanges), end, cp,
                                    [](char32_t c, const CategoryRange& r) { return c < r.first; });
  if (it == std::begin(kCategoryRanges)) return Category::kOther;
  --it;
  return cp <= it->last ? it->category : Category::kOther;
}

bool is_whitespace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const auto* end = std::end(kLowercasePairs);
  const auto* it = std::lower_bound(std::begin(kLowercasePairs), end, cp,
                                    [](const LowercasePair& p, char32_t c) { return p.cp < c; });
  return (it != end && it->cp == cp) ? it->lower : cp;
}

int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  if (lead >= 0xf0) return 4;
  return 1;
}

char32_t decode_utf8(std::string_view text, size_t* pos) {
  const auto lead = uint8_t(text[*pos]);
  int len;
  if (lead < 0x80) {
    ++*pos;
    return lead;
  } else if ((lead & 0xe0) == 0xc0) {
    len = 2;
  } else if ((lead & 0xf0) == 0xe0) {
    len = 3;
  } else if ((lead & 0xf8) == 0xf0) {
    len = 4;
  } else {
    ++*pos;  // continuation byte or 0xF8..0xFF
    return 0xfffd;
  }
  if (*pos + size_t(len) > text.size()) {
    ++*pos;
    return 0xfffd;
  }
  char32_t cp = lead & (0x7f >> len);
  for (int i = 1; i < len; ++i) {
    const auto cont = uint8_t(text[*pos + size_t(i)]);
    if ((cont & 0xc0) != 0x80) {
      ++*pos;
      return 0xfffd;
    }
    cp = (cp << 6) | (cont & 0x3f);
  }
  if (cp > 0x10ffff) {
    ++*pos;
    return 0xfffd;
  }
  *pos += size_t(len);
  return cp;
}

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) out.push_back(decode_utf8(text, &pos));
  return out;
}

namespace {

// Length of the strictly valid sequence at `pos`, or 0.
size_t valid_sequence_length(std::string_view text, size_t pos) {
  static constexpr char32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  const auto lead = uint8_t(text[pos]);
  if (lead < 0x80) return 1;
  const int len = utf8_sequence_length(lead);
  if (len == 1 || lead >= 0xf8 || pos + size_t(len) > text.size()) return 0;
  char32_t cp = lead & (0x7f >> len);
  for (int i = 1; i < len; ++i) {
    const auto cont = uint8_t(text[pos + size_t(i)]);
    if ((cont & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cont & 0x3f);
  }
  if (cp < kMinForLength[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return size_t(len);
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = valid_sequence_length(text, pos);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = valid_sequence_length(text, pos);
    if (len == 0) {
      out.append("\xef\xbf\xbd");
      ++pos;
    } else {
      out.append(text.substr(pos, len));
      pos += len;
    }
  }
  return out;
}

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xc0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xe0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(char(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(char(0xf0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(char(0x80 | (cp & 0x3f)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(cp, &out);
  return out;
}

size_t incomplete_utf8_suffix(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence is unfinished.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = uint8_t(text[n - back]);
    if ((byte & 0xc0) == 0x80) continue;  // continuation byte: keep looking
    const int len = utf8_sequence_length(byte);
    return (len > int(back)) ? back : 0;
  }
  return 0;
}

}  // namespace tessera::unicode
