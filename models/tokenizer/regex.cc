#include "models/tokenizer/regex.h"

#include <functional>

#include "engine/core/error.h"
#include "engine/core/unicode.h"

namespace tessera {

using unicode::Category;

namespace {

constexpr int kUnbounded = -1;
constexpr uint64_t kStepBudgetPerChar = 20000;

struct ClassItem {
  enum Kind : uint8_t { kRange, kCategory, kNotCategory, kSpace, kNotSpace, kDigit, kNotDigit, kWord, kNotWord } kind;
  char32_t first = 0, last = 0;
  Category category = Category::kOther;
};

bool is_word(char32_t c) {
  const Category cat = unicode::category(c);
  return c == '_' || cat == Category::kLetter || cat == Category::kMark || cat == Category::kNumber;
}

bool is_digit(char32_t c) { return unicode::category(c) == Category::kNumber; }

bool item_matches(const ClassItem& item, char32_t c) {
  switch (item.kind) {
    case ClassItem::kRange: return c >= item.first && c <= item.last;
    case ClassItem::kCategory: return unicode::category(c) == item.category;
    case ClassItem::kNotCategory: return unicode::category(c) != item.category;
    case ClassItem::kSpace: return unicode::is_whitespace(c);
    case ClassItem::kNotSpace: return !unicode::is_whitespace(c);
    case ClassItem::kDigit: return is_digit(c);
    case ClassItem::kNotDigit: return !is_digit(c);
    case ClassItem::kWord: return is_word(c);
    case ClassItem::kNotWord: return !is_word(c);
  }
  return false;
}

}  // namespace

struct Regex::Node {
  enum Kind : uint8_t { kClass, kAny, kStart, kEnd, kGroup, kLookahead, kNegLookahead, kRepeat } kind = kClass;
  // kClass (a literal is a one-range class)
  std::vector<ClassItem> items;
  bool negated = false;
  bool icase = false;
  // kGroup, kLookahead, kNegLookahead
  std::vector<std::vector<Node>> alternatives;
  // kRepeat: child in children[0]
  std::vector<Node> children;
  int min = 0, max = 0;
  bool greedy = true;

  bool is_single_char() const { return kind == kClass || kind == kAny; }

  bool matches_char(char32_t c) const {
    if (kind == kAny) return c != '\n';
    bool hit = false;
    for (const ClassItem& item : items) {
      if (item_matches(item, c) || (icase && item_matches(item, unicode::to_lower(c)))) {
        hit = true;
        break;
      }
    }
    return hit != negated;
  }
};

namespace {

using Node = Regex::Node;
using Alternatives = std::vector<std::vector<Node>>;

class Parser {
 public:
  Parser(std::u32string pattern, const std::string& utf8) : p_(std::move(pattern)), utf8_(utf8) {}

  Alternatives parse() {
    Alternatives alts = parse_alternatives(false);
    if (pos_ != p_.size()) fail("unbalanced ')'");
    return alts;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("regex '" + utf8_ + "': " + what + " at position " + std::to_string(pos_));
  }

  bool at_end() const { return pos_ >= p_.size(); }
  char32_t peek() const { return at_end() ? 0 : p_[pos_]; }
  bool consume(std::u32string_view s) {
    if (p_.compare(pos_, s.size(), s) != 0) return false;
    pos_ += s.size();
    return true;
  }

  Alternatives parse_alternatives(bool icase) {
    Alternatives alts(1);
    while (!at_end() && peek() != ')') {
      if (peek() == '|') {
        ++pos_;
        alts.emplace_back();
        continue;
      }
      Node atom = parse_atom(icase);
      alts.back().push_back(parse_quantifier(std::move(atom)));
    }
    return alts;
  }

  Node parse_group(bool icase) {
    Node node;
    node.kind = Node::kGroup;
    if (consume(U"?:")) {
    } else if (consume(U"?i:")) {
      icase = true;
    } else if (consume(U"?=")) {
      node.kind = Node::kLookahead;
    } else if (consume(U"?!")) {
      node.kind = Node::kNegLookahead;
    } else if (peek() == '?') {
      fail("unsupported group syntax");
    }
    node.alternatives = parse_alternatives(icase);
    if (!consume(U")")) fail("missing ')'");
    return node;
  }

  Node parse_atom(bool icase) {
    const char32_t c = p_[pos_++];
    Node node;
    node.icase = icase;
    switch (c) {
      case '(': return parse_group(icase);
      case '[': return parse_class(icase);
      case '.': node.kind = Node::kAny; return node;
      case '^': node.kind = Node::kStart; return node;
      case '$': node.kind = Node::kEnd; return node;
      case '*': case '+': case '?': case '{': fail("quantifier without a target");
      case '\\': node.items.push_back(parse_escape()); return node;
      default: node.items.push_back(literal(c, icase)); return node;
    }
  }

  static ClassItem literal(char32_t c, bool icase) {
    const char32_t folded = icase ? unicode::to_lower(c) : c;
    return {ClassItem::kRange, folded, folded, Category::kOther};
  }

  Category parse_category_name() {
    if (!consume(U"{")) {
      // Single-letter form: \pL
      if (at_end()) fail("incomplete \\p");
      return category_from_letter(p_[pos_++]);
    }
    const size_t close = p_.find('}', pos_);
    if (close == std::u32string::npos) fail("missing '}' after \\p{");
    const std::u32string name = p_.substr(pos_, close - pos_);
    pos_ = close + 1;
    if (name.size() != 1) fail("unsupported category \\p{" + unicode::encode_utf8(name) + "}");
    return category_from_letter(name[0]);
  }

  Category category_from_letter(char32_t letter) {
    switch (letter) {
      case 'L': return Category::kLetter;
      case 'M': return Category::kMark;
      case 'N': return Category::kNumber;
      case 'P': return Category::kPunctuation;
      case 'S': return Category::kSymbol;
      case 'Z': return Category::kSeparator;
      case 'C': return Category::kOther;
      default: fail("unsupported category letter");
    }
  }

  ClassItem parse_escape() {
    if (at_end()) fail("trailing backslash");
    const char32_t c = p_[pos_++];
    switch (c) {
      case 's': return {ClassItem::kSpace};
      case 'S': return {ClassItem::kNotSpace};
      case 'd': return {ClassItem::kDigit};
      case 'D': return {ClassItem::kNotDigit};
      case 'w': return {ClassItem::kWord};
      case 'W': return {ClassItem::kNotWord};
      case 'p': return {ClassItem::kCategory, 0, 0, parse_category_name()};
      case 'P': return {ClassItem::kNotCategory, 0, 0, parse_category_name()};
      case 'n': return literal('\n', false);
      case 'r': return literal('\r', false);
      case 't': return literal('\t', false);
      case 'f': return literal('\f', false);
      case 'v': return literal('\v', false);
      case '0': return literal(0, false);
      case 'x': return literal(parse_hex_escape(), false);
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) fail("unsupported escape");
        return literal(c, false);
    }
  }

  char32_t parse_hex_escape() {
    const bool braced = consume(U"{");
    char32_t value = 0;
    int digits = 0;
    while (!at_end() && (braced ? peek() != '}' : digits < 2)) {
      const char32_t h = p_[pos_++];
      int v;
      if (h >= '0' && h <= '9') v = int(h - '0');
      else if (h >= 'a' && h <= 'f') v = int(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v = int(h - 'A' + 10);
      else fail("bad hex escape");
      value = value * 16 + char32_t(v);
      if (++digits > 6) fail("hex escape too long");
    }
    if (braced && !consume(U"}")) fail("missing '}' in hex escape");
    if (digits == 0 || value > 0x10ffff) fail("bad hex escape");
    return value;
  }

  Node parse_class(bool icase) {
    Node node;
    node.icase = icase;
    if (consume(U"^")) node.negated = true;
    bool first = true;
    while (true) {
      if (at_end()) fail("missing ']'");
      char32_t c = p_[pos_];
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      ++pos_;
      ClassItem item = c == '\\' ? parse_escape() : literal(c, false);
      const bool is_char = item.kind == ClassItem::kRange;
      if (is_char && peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        const char32_t hi_raw = p_[pos_++];
        const ClassItem hi = hi_raw == '\\' ? parse_escape() : literal(hi_raw, false);
        if (hi.kind != ClassItem::kRange || hi.first < item.first) fail("bad range in class");
        item.last = hi.first;
      }
      node.items.push_back(item);
    }
    return node;
  }

  Node parse_quantifier(Node atom) {
    int min, max;
    if (consume(U"*")) { min = 0; max = kUnbounded; }
    else if (consume(U"+")) { min = 1; max = kUnbounded; }
    else if (consume(U"?")) { min = 0; max = 1; }
    else if (peek() == '{' && parse_braces(&min, &max)) {}
    else return atom;
    if (atom.kind == Node::kStart || atom.kind == Node::kEnd) fail("quantified anchor");
    Node rep;
    rep.kind = Node::kRepeat;
    rep.min = min;
    rep.max = max;
    if (consume(U"?")) rep.greedy = false;
    else consume(U"+");  // possessive: treated as greedy
    rep.children.push_back(std::move(atom));
    return rep;
  }

  // Parses {m}, {m,} or {m,n}; returns false (consuming nothing) if the brace
  // is not a quantifier.
  bool parse_braces(int* min, int* max) {
    size_t p = pos_ + 1;
    auto number = [&](int* out) {
      const size_t start = p;
      long v = 0;
      while (p < p_.size() && p_[p] >= '0' && p_[p] <= '9' && v < 100000) v = v * 10 + long(p_[p++] - '0');
      *out = int(v);
      return p > start;
    };
    if (!number(min)) return false;
    *max = *min;
    if (p < p_.size() && p_[p] == ',') {
      ++p;
      if (!number(max)) *max = kUnbounded;
    }
    if (p >= p_.size() || p_[p] != '}') return false;
    if (*max != kUnbounded && *max < *min) fail("bad repetition bounds");
    pos_ = p + 1;
    return true;
  }

  std::u32string p_;
  const std::string& utf8_;
  size_t pos_ = 0;
};

using Continuation = std::function<bool(size_t)>;

class Matcher {
 public:
  Matcher(std::u32string_view text) : text_(text), budget_(kStepBudgetPerChar * (text.size() + 1)) {}

  bool match_alternatives(const Alternatives& alts, size_t pos, const Continuation& k) {
    for (const auto& seq : alts) {
      if (match_sequence(seq, 0, pos, k)) return true;
    }
    return false;
  }

 private:
  void step() {
    if (++steps_ > budget_) throw Error("regex: match exceeded its step budget");
  }

  bool match_sequence(const std::vector<Node>& seq, size_t index, size_t pos, const Continuation& k) {
    step();
    if (index == seq.size()) return k(pos);
    const Node& node = seq[index];
    auto rest = [&](size_t next) { return match_sequence(seq, index + 1, next, k); };
    switch (node.kind) {
      case Node::kClass:
      case Node::kAny:
        return pos < text_.size() && node.matches_char(text_[pos]) && rest(pos + 1);
      case Node::kStart: return pos == 0 && rest(pos);
      case Node::kEnd: return pos == text_.size() && rest(pos);
      case Node::kGroup: return match_alternatives(node.alternatives, pos, rest);
      case Node::kLookahead:
      case Node::kNegLookahead: {
        const bool found = match_alternatives(node.alternatives, pos, [](size_t) { return true; });
        return found == (node.kind == Node::kLookahead) && rest(pos);
      }
      case Node::kRepeat:
        if (node.children[0].is_single_char()) return match_char_repeat(node, pos, rest);
        return match_repeat(node, 0, pos, rest);
    }
    return false;
  }

  // Repetition of one character class, without recursion per repetition.
  bool match_char_repeat(const Node& rep, size_t pos, const Continuation& k) {
    const Node& child = rep.children[0];
    size_t limit = rep.max == kUnbounded ? text_.size() - pos : std::min<size_t>(size_t(rep.max), text_.size() - pos);
    size_t count = 0;
    while (count < limit && child.matches_char(text_[pos + count])) ++count;
    if (count < size_t(rep.min)) return false;
    if (rep.greedy) {
      for (size_t n = count + 1; n-- > size_t(rep.min);) {
        step();
        if (k(pos + n)) return true;
      }
      return false;
    }
    for (size_t n = size_t(rep.min); n <= count; ++n) {
      step();
      if (k(pos + n)) return true;
    }
    return false;
  }

  bool match_repeat(const Node& rep, int done, size_t pos, const Continuation& k) {
    step();
    const bool can_more = rep.max == kUnbounded || done < rep.max;
    auto more = [&]() {
      return can_more && match_sequence(rep.children, 0, pos, [&](size_t next) {
               // A repetition that consumed nothing cannot make progress.
               return next != pos && match_repeat(rep, done + 1, next, k);
             });
    };
    if (done < rep.min) return more();
    if (rep.greedy) return more() || k(pos);
    return k(pos) || more();
  }

  std::u32string_view text_;
  uint64_t steps_ = 0;
  uint64_t budget_;
};

}  // namespace

Regex::Regex(std::string_view pattern_utf8) : pattern_(pattern_utf8) {
  alternatives_ = std::make_unique<Alternatives>(Parser(unicode::decode_utf8(pattern_utf8), pattern_).parse());
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::u32string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  Matcher matcher(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = 0;
    const bool found = matcher.match_alternatives(*alternatives_, pos, [&](size_t e) {
      end = e;
      return true;
    });
    if (found && end > pos) {
      matches.emplace_back(pos, end);
      pos = end;
    } else {
      ++pos;
    }
  }
  return matches;
}

std::vector<std::u32string> split_isolated(const Regex& regex, std::u32string_view text) {
  std::vector<std::u32string> pieces;
  size_t last = 0;
  for (const auto& [begin, end] : regex.find_all(text)) {
    if (begin > last) pieces.emplace_back(text.substr(last, begin - last));
    pieces.emplace_back(text.substr(begin, end - begin));
    last = end;
  }
  if (last < text.size()) pieces.emplace_back(text.substr(last));
  return pieces;
}

}  // namespace tessera
