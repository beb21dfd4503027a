#include "engine/grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/utf8_ranges.h"
#include "engine/core/unicode.h"

namespace tessera::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxNesting = 128;

Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
    else out.emplace_back(lo, hi);
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

// Removes [lo, hi] from the ranges.
Ranges without(const Ranges& r, uint32_t lo, uint32_t hi) {
  Ranges out;
  for (const auto& [a, b] : r) {
    if (b < lo || a > hi) {
      out.emplace_back(a, b);
      continue;
    }
    if (a < lo) out.emplace_back(a, lo - 1);
    if (b > hi) out.emplace_back(hi + 1, b);
  }
  return out;
}

const Ranges kDigits = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};

class RegexConverter {
 public:
  RegexConverter(std::string_view pattern, bool json_string) : p_(pattern), json_(json_string) {}

  std::string convert() {
    if (!unicode::is_valid_utf8(p_)) fail("the pattern is not valid UTF-8");
    if (!p_.empty() && p_[0] == '^') ++pos_;
    std::string out = alternation(0);
    if (pos_ < p_.size()) fail("unbalanced ')'");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("regex at offset " + std::to_string(pos_) + ": " + what);
  }

  bool at_end_anchor() const { return p_[pos_] == '$' && pos_ + 1 == p_.size(); }

  std::string alternation(int nesting) {
    if (nesting > kMaxNesting) fail("groups nest deeper than " + std::to_string(kMaxNesting));
    std::vector<std::string> alts{sequence(nesting)};
    while (pos_ < p_.size() && p_[pos_] == '|') {
      ++pos_;
      alts.push_back(sequence(nesting));
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "( ";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + " )";
  }

  std::string sequence(int nesting) {
    std::string out;
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      if (at_end_anchor()) {
        ++pos_;
        break;
      }
      std::string atom_text = atom(nesting);
      atom_text = quantified(atom_text);
      out += (out.empty() ? "" : " ") + atom_text;
    }
    return out.empty() ? "\"\"" : "( " + out + " )";
  }

  std::string atom(int nesting) {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (p_.substr(pos_, 3) == "?P<" || (p_.substr(pos_, 2) == "?<" && p_.substr(pos_, 3) != "?<=" && p_.substr(pos_, 3) != "?<!")) {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) fail("unterminated group name");
        pos_ = close + 1;
      } else if (pos_ < p_.size() && p_[pos_] == '?') {
        fail("look-around and inline flags are not supported");
      }
      std::string inner = alternation(nesting + 1);
      if (pos_ >= p_.size() || p_[pos_] != ')') fail("missing ')'");
      ++pos_;
      return "( " + inner + " )";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return class_text(complement({{'\n', '\n'}}));
    }
    if (c == '^' || c == '$') fail("anchors are supported only at the start and end");
    if (c == '*' || c == '+' || c == '?') fail("a quantifier with nothing to repeat");
    if (c == '\\') {
      ++pos_;
      Ranges shorthand;
      if (escape_class(shorthand)) return class_text(shorthand);
      return literal(escaped_char());
    }
    return literal(next_code_point());
  }

  // The pattern is valid UTF-8 (checked by convert()).
  uint32_t next_code_point() { return unicode::decode_utf8(p_, &pos_); }

  // After a backslash: \d \D \w \W \s \S as ranges.
  bool escape_class(Ranges& out) {
    if (pos_ >= p_.size()) fail("a pattern cannot end with '\\'");
    switch (p_[pos_]) {
      case 'd': out = kDigits; break;
      case 'D': out = complement(kDigits); break;
      case 'w': out = kWord; break;
      case 'W': out = complement(kWord); break;
      case 's': out = kSpace; break;
      case 'S': out = complement(kSpace); break;
      default: return false;
    }
    ++pos_;
    return true;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= p_.size()) fail("unfinished hex escape");
      const char h = p_[pos_++];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("expected a hex digit");
      v = v * 16 + uint32_t(d);
    }
    return v;
  }

  uint32_t escaped_char() {
    const char e = p_[pos_++];
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'b': case 'B': case 'A': case 'Z': case 'z': fail(std::string("the anchor '\\") + e + "' is not supported");
      default:
        if (e >= '1' && e <= '9') fail("back-references are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail(std::string("unknown escape '\\") + e + "'");
        --pos_;
        return next_code_point();
    }
  }

  std::string char_class() {
    ++pos_;  // '['
    bool negated = false;
    if (pos_ < p_.size() && p_[pos_] == '^') negated = true, ++pos_;
    Ranges ranges;
    bool first = true;
    while (pos_ < p_.size() && (p_[pos_] != ']' || first)) {
      first = false;
      uint32_t lo;
      if (p_[pos_] == '\\') {
        ++pos_;
        Ranges shorthand;
        if (escape_class(shorthand)) {
          ranges.insert(ranges.end(), shorthand.begin(), shorthand.end());
          continue;
        }
        lo = escaped_char();
      } else {
        lo = next_code_point();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (p_[pos_] == '\\') {
          ++pos_;
          hi = escaped_char();
        } else {
          hi = next_code_point();
        }
        if (hi < lo) fail("a character range runs backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    if (pos_ >= p_.size()) fail("missing ']'");
    ++pos_;
    return class_text(negated ? complement(ranges) : normalized(ranges));
  }

  std::string class_text(Ranges ranges) {
    if (json_) {
      // Quotes, backslashes and control characters would need escapes
      // inside a JSON string; the class leaves them out.
      ranges = without(without(without(ranges, 0, 0x1F), '"', '"'), '\\', '\\');
    }
    ranges = normalized(ranges);
    if (ranges.empty()) fail("a character class that matches nothing");
    return gbnf_class(ranges);
  }

  std::string literal(uint32_t cp) {
    std::string bytes;
    if (json_ && (cp == '"' || cp == '\\')) {
      bytes = std::string("\\") + char(cp);
    } else if (json_ && cp < 0x20) {
      static const char* const named[] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                          "\\b", "\\t", "\\n", nullptr, "\\f", "\\r"};
      if (cp < 14 && named[cp]) {
        bytes = named[cp];
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
        bytes = buf;
      }
    } else {
      unicode::append_utf8(cp, &bytes);
    }
    return gbnf_literal(bytes);
  }

  bool read_count(uint64_t& v) {
    const size_t start = pos_;
    v = 0;
    while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = v * 10 + uint64_t(p_[pos_++] - '0');
      if (v > 10000) fail("a repetition count above 10000");
    }
    return pos_ > start;
  }

  std::string quantified(std::string atom_text) {
    while (pos_ < p_.size()) {
      const char c = p_[pos_];
      std::string suffix;
      if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        suffix = std::string(1, c);
      } else if (c == '{') {
        const size_t save = pos_;
        ++pos_;
        uint64_t min = 0, max = 0;
        if (!read_count(min)) {
          pos_ = save;  // a literal '{', as Python reads it
          return atom_text;
        }
        suffix = "{" + std::to_string(min);
        if (pos_ < p_.size() && p_[pos_] == ',') {
          ++pos_;
          suffix += ",";
          if (read_count(max)) {
            if (max < min) fail("a repetition's maximum is below its minimum");
            suffix += std::to_string(max);
          }
        }
        if (pos_ >= p_.size() || p_[pos_] != '}') fail("expected '}'");
        ++pos_;
        suffix += "}";
      } else {
        return atom_text;
      }
      if (pos_ < p_.size() && p_[pos_] == '?') ++pos_;  // lazy: same strings
      if (pos_ < p_.size() && p_[pos_] == '+') fail("possessive quantifiers are not supported");
      atom_text = "( " + atom_text + " )" + suffix;
    }
    return atom_text;
  }

  std::string_view p_;
  bool json_;
  size_t pos_ = 0;
};

}  // namespace

std::string regex_to_gbnf_expression(std::string_view pattern, bool json_string) {
  return RegexConverter(pattern, json_string).convert();
}

std::string regex_to_gbnf(std::string_view pattern) { return "root ::= " + regex_to_gbnf_expression(pattern, false) + "\n"; }

}  // namespace tessera::grammar
