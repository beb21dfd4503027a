#include "engine/grammar/gbnf_parser.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/grammar/utf8_ranges.h"
#include "engine/core/unicode.h"

namespace tessera::grammar {
namespace {

constexpr int kMaxNesting = 256;
constexpr uint64_t kMaxRepetition = 10000;

using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

class GbnfParser {
 public:
  GbnfParser(std::string_view text, GrammarLimits limits) : text_(text), builder_(limits) {}

  Grammar parse() {
    if (!unicode::is_valid_utf8(text_)) fail("the grammar is not valid UTF-8");
    skip_space();
    while (pos_ < text_.size()) {
      const std::string name = parse_name();
      skip_space();
      expect("::=");
      const uint32_t rule = builder_.rule(name);
      if (builder_.defined(rule)) fail("the rule '" + name + "' is defined twice");
      parse_alternatives(rule, 0);
      skip_space();
    }
    return builder_.finish(builder_.rule("root"));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw GrammarError("grammar line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  void expect(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) fail("expected '" + std::string(token) + "'");
    pos_ += token.size();
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  // True when the text at the cursor starts the next rule ("name ::=").
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  void parse_alternatives(uint32_t rule, int nesting) {
    if (nesting > kMaxNesting) fail("groups nest deeper than " + std::to_string(kMaxNesting));
    for (;;) {
      builder_.add_alternative(rule, parse_sequence(nesting));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return;
    }
  }

  std::vector<Element> parse_sequence(int nesting) {
    std::vector<Element> seq;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) break;
      const char c = text_[pos_];
      if (c == '|' || c == ')') break;
      if (at_rule_start()) break;
      std::vector<Element> item = parse_item(nesting);
      skip_postfix_space();
      item = apply_postfixes(std::move(item));
      seq.insert(seq.end(), item.begin(), item.end());
    }
    return seq;
  }

  void skip_postfix_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  std::vector<Element> parse_item(int nesting) {
    const char c = text_[pos_];
    if (c == '"') return parse_literal();
    if (c == '[') return {parse_class()};
    if (c == '.') {
      ++pos_;
      return {class_element({{0, kMaxCodePoint}})};
    }
    if (c == '(') {
      ++pos_;
      const uint32_t group = builder_.fresh_rule("group");
      parse_alternatives(group, nesting + 1);
      skip_space();
      expect(")");
      return {GrammarBuilder::call(group)};
    }
    if (is_name_char(c)) return {GrammarBuilder::call(builder_.rule(parse_name()))};
    fail(std::string("unexpected character '") + c + "'");
  }

  // One code point of the source text, decoding \ escapes when `escapes`.
  uint32_t parse_char() {
    if (pos_ >= text_.size()) fail("unexpected end of the grammar");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      if (++pos_ >= text_.size()) fail("unexpected end after '\\'");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return uint32_t(e);
        default: fail(std::string("unknown escape '\\") + e + "'");
      }
    }
    return unicode::decode_utf8(text_, &pos_);  // valid: checked by parse()
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= text_.size()) fail("unexpected end in a hex escape");
      const char h = text_[pos_++];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("expected a hex digit");
      v = v * 16 + uint32_t(d);
    }
    if (v > kMaxCodePoint) fail("code point beyond U+10FFFF");
    return v;
  }

  std::vector<Element> parse_literal() {
    ++pos_;  // opening quote
    std::vector<Element> seq;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      std::string bytes;
      unicode::append_utf8(parse_char(), &bytes);
      for (unsigned char b : bytes) {
        ByteSet set;
        set.add(b);
        seq.push_back(builder_.bytes(set));
      }
    }
    expect("\"");
    return seq;
  }

  Element parse_class() {
    ++pos_;  // '['
    bool negated = false;
    if (pos_ < text_.size() && text_[pos_] == '^') negated = true, ++pos_;
    CodeRanges ranges;
    while (pos_ < text_.size() && text_[pos_] != ']') {
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("a character range runs backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    expect("]");
    if (negated) ranges = complement(ranges);
    if (ranges.empty()) fail("the character class matches nothing");
    return class_element(ranges);
  }

  static CodeRanges complement(CodeRanges ranges) {
    std::sort(ranges.begin(), ranges.end());
    CodeRanges out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : ranges) {
      if (lo > next) out.emplace_back(next, lo - 1);
      next = std::max(next, hi + 1);
    }
    if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
    return out;
  }

  // A class of code points: one byte set when all are ASCII, else a rule
  // whose alternatives are the class's UTF-8 byte sequences.
  Element class_element(const CodeRanges& ranges) {
    ByteSet ascii;
    std::vector<ByteRangeSequence> multi;
    for (const auto& [lo, hi] : ranges) {
      utf8_sequences(lo, hi, [&](const ByteRangeSequence& seq) {
        if (seq.size() == 1) ascii.add_range(seq[0].first, seq[0].second);
        else multi.push_back(seq);
      });
    }
    if (multi.empty()) return builder_.bytes(ascii);
    auto cached = class_rules_.find(ranges);
    if (cached != class_rules_.end()) return GrammarBuilder::call(cached->second);
    const uint32_t rule = builder_.fresh_rule("class");
    if (!ascii.empty()) builder_.add_alternative(rule, {builder_.bytes(ascii)});
    for (const ByteRangeSequence& seq : multi) {
      std::vector<Element> alt;
      for (const auto& [lo, hi] : seq) {
        ByteSet set;
        set.add_range(lo, hi);
        alt.push_back(builder_.bytes(set));
      }
      builder_.add_alternative(rule, alt);
    }
    class_rules_.emplace(ranges, rule);
    return GrammarBuilder::call(rule);
  }

  uint64_t parse_count() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + uint64_t(text_[pos_++] - '0');
      if (v > kMaxRepetition) fail("a repetition count above " + std::to_string(kMaxRepetition));
    }
    if (pos_ == start) fail("expected a repetition count");
    return v;
  }

  std::vector<Element> apply_postfixes(std::vector<Element> item) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      uint64_t min = 0, max = 0;
      bool unbounded = false;
      if (c == '*') min = 0, unbounded = true;
      else if (c == '+') min = 1, unbounded = true;
      else if (c == '?') min = 0, max = 1;
      else if (c == '{') {
        ++pos_;
        skip_postfix_space();
        min = max = parse_count();
        skip_postfix_space();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          skip_postfix_space();
          if (pos_ < text_.size() && text_[pos_] == '}') unbounded = true;
          else max = parse_count();
          skip_postfix_space();
        }
        if (pos_ >= text_.size() || text_[pos_] != '}') fail("expected '}'");
        if (!unbounded && max < min) fail("a repetition's maximum is below its minimum");
      } else {
        break;
      }
      ++pos_;
      item = repeat(item, min, max, unbounded);
      skip_postfix_space();
    }
    return item;
  }

  std::vector<Element> repeat(const std::vector<Element>& item, uint64_t min, uint64_t max, bool unbounded) {
    Element unit = item.size() == 1 ? item[0] : wrap(item);
    std::vector<Element> out(min, unit);
    if (unbounded) {
      // star ::= unit star | ""
      const uint32_t star = builder_.fresh_rule("star");
      builder_.add_alternative(star, {unit, GrammarBuilder::call(star)});
      builder_.add_alternative(star, {});
      out.push_back(GrammarBuilder::call(star));
    } else if (max > min) {
      // opt_k ::= unit opt_{k-1} | ""  for k up to max - min
      uint32_t inner = 0;
      for (uint64_t k = 1; k <= max - min; ++k) {
        const uint32_t opt = builder_.fresh_rule("opt");
        if (k == 1) builder_.add_alternative(opt, {unit});
        else builder_.add_alternative(opt, {unit, GrammarBuilder::call(inner)});
        builder_.add_alternative(opt, {});
        inner = opt;
      }
      out.push_back(GrammarBuilder::call(inner));
    }
    return out;
  }

  Element wrap(const std::vector<Element>& seq) {
    const uint32_t rule = builder_.fresh_rule("seq");
    builder_.add_alternative(rule, seq);
    return GrammarBuilder::call(rule);
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
  std::map<CodeRanges, uint32_t> class_rules_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, GrammarLimits limits) { return GbnfParser(text, limits).parse(); }

}  // namespace tessera::grammar
