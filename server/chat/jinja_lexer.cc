#include "server/chat/jinja_lexer.h"

#include <cctype>
#include <charconv>

#include "server/chat/jinja_template.h"

namespace tessera::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("template line " + std::to_string(line) + ": " + what);
}

// jinja2 reads the source line by line: \r\n and \r become \n, and one
// trailing newline is dropped.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Where the tag opened at `open` closes: the index of its closing
// delimiter, skipping string literals.
size_t find_tag_end(const std::string& src, size_t open, char kind, int line) {
  const char close_first = kind == '{' ? '}' : kind;
  char quote = 0;
  for (size_t i = open + 2; i + 1 < src.size(); ++i) {
    const char c = src[i];
    if (kind != '#' && quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (kind != '#' && (c == '\'' || c == '"')) {
      quote = c;
      continue;
    }
    if (c == close_first && src[i + 1] == '}') return i;
  }
  fail(line, std::string("unclosed '{") + kind + "'");
}

}  // namespace

std::vector<Piece> split_template(std::string_view raw) {
  const std::string src = normalize_newlines(raw);
  std::vector<Piece> pieces;
  size_t pos = 0;
  int line = 1;
  bool strip_all_next = false, trim_newline_next = false;
  while (pos <= src.size()) {
    size_t open = src.find('{', pos);
    while (open != std::string::npos &&
           (open + 1 >= src.size() || (src[open + 1] != '{' && src[open + 1] != '%' && src[open + 1] != '#'))) {
      open = src.find('{', open + 1);
    }
    size_t text_begin = pos;
    const size_t text_end = open == std::string::npos ? src.size() : open;
    if (strip_all_next) {
      while (text_begin < text_end && is_space(src[text_begin])) ++text_begin;
    } else if (trim_newline_next && text_begin < text_end && src[text_begin] == '\n') {
      ++text_begin;
    }
    std::string text = src.substr(text_begin, text_end - text_begin);
    const int text_line = line + count_lines(std::string_view(src).substr(pos, text_begin - pos));
    if (open == std::string::npos) {
      if (!text.empty()) pieces.push_back({Piece::Kind::kText, text, text_line});
      break;
    }
    const char kind = src[open + 1];
    const char open_mod = open + 2 < src.size() ? src[open + 2] : 0;
    if (open_mod == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if ((kind == '%' || kind == '#') && open_mod != '+') {
      const size_t nl = text.rfind('\n');
      const size_t tail = nl == std::string::npos ? 0 : nl + 1;
      const bool at_line_start = nl != std::string::npos || text_begin == 0 || src[text_begin - 1] == '\n';
      bool blank = true;
      for (size_t i = tail; i < text.size(); ++i) blank &= text[i] == ' ' || text[i] == '\t';
      if (at_line_start && blank) text.resize(tail);
    }
    if (!text.empty()) pieces.push_back({Piece::Kind::kText, text, text_line});
    line += count_lines(std::string_view(src).substr(pos, open - pos));

    const size_t close = find_tag_end(src, open, kind, line);
    size_t inner_begin = open + 2 + ((open_mod == '-' || open_mod == '+') ? 1 : 0);
    size_t inner_end = close;
    const char close_mod = close > inner_begin ? src[close - 1] : 0;
    if (close_mod == '-' || close_mod == '+') --inner_end;
    strip_all_next = close_mod == '-';
    trim_newline_next = !strip_all_next && close_mod != '+' && (kind == '%' || kind == '#');
    if (kind != '#') {
      pieces.push_back({kind == '{' ? Piece::Kind::kOutput : Piece::Kind::kStatement,
                        src.substr(inner_begin, inner_end > inner_begin ? inner_end - inner_begin : 0), line});
    }
    line += count_lines(std::string_view(src).substr(open, close + 2 - open));
    pos = close + 2;
  }
  return pieces;
}

namespace {

size_t read_string(std::string_view s, size_t i, int line, std::string* out) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote) {
    char c = s[i++];
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (i >= s.size()) break;
    c = s[i++];
    switch (c) {
      case 'n': *out += '\n'; break;
      case 't': *out += '\t'; break;
      case 'r': *out += '\r'; break;
      case '\\': *out += '\\'; break;
      case '\'': *out += '\''; break;
      case '"': *out += '"'; break;
      case '\n': break;
      default:
        *out += '\\';
        *out += c;
    }
  }
  if (i >= s.size()) fail(line, "unterminated string literal");
  return i + 1;
}

bool starts_with_any(std::string_view s, size_t i, std::string_view* op) {
  static constexpr std::string_view kOps[] = {"==", "!=", "<=", ">=", "//", "**", "(", ")", "[", "]", "{", "}", ",", ".",
                                              ":",  "|",  "~",  "+",  "-",  "*",  "/", "%", "<", ">", "="};
  for (std::string_view o : kOps) {
    if (s.substr(i, o.size()) == o) {
      *op = o;
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Token> tokenize_expression(std::string_view s, int line) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      line += c == '\n';
      ++i;
      continue;
    }
    Token t;
    t.line = line;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.kind = Token::Kind::kName;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        for (++j; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]));) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          for (j = k; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]));) ++j;
        }
      }
      std::string digits;
      for (size_t k = i; k < j; ++k) {
        if (s[k] != '_') digits += s[k];
      }
      if (is_float) {
        t.kind = Token::Kind::kFloat;
        std::from_chars(digits.data(), digits.data() + digits.size(), t.number);
      } else {
        t.kind = Token::Kind::kInteger;
        auto r = std::from_chars(digits.data(), digits.data() + digits.size(), t.integer);
        if (r.ec != std::errc()) fail(line, "integer literal out of range");
      }
      i = j;
    } else if (c == '\'' || c == '"') {
      t.kind = Token::Kind::kString;
      const size_t j = read_string(s, i, line, &t.text);
      line += count_lines(s.substr(i, j - i));
      i = j;
    } else {
      std::string_view op;
      if (!starts_with_any(s, i, &op)) fail(line, std::string("unexpected character '") + c + "'");
      t.kind = Token::Kind::kOperator;
      t.text = std::string(op);
      i += op.size();
    }
    tokens.push_back(std::move(t));
  }
  Token end;
  end.line = line;
  tokens.push_back(end);
  return tokens;
}

}  // namespace tessera::jinja
