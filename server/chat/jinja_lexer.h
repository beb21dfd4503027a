#pragma once
// Splits a template into text, `{{ }}` and `{% %}` pieces (comments dropped,
// whitespace control applied as jinja2 does with trim_blocks and
// lstrip_blocks), and splits the inside of a tag into tokens.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::jinja {

struct Piece {
  enum class Kind : uint8_t { kText, kOutput, kStatement };
  Kind kind = Kind::kText;
  std::string text;  // the text, or the inside of the tag
  int line = 1;
};

std::vector<Piece> split_template(std::string_view source);

struct Token {
  enum class Kind : uint8_t { kName, kString, kInteger, kFloat, kOperator, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // name, operator, or the string's decoded value
  int64_t integer = 0;
  double number = 0.0;
  int line = 1;
};

// Always ends with a kEnd token.
std::vector<Token> tokenize_expression(std::string_view inner, int line);

}  // namespace tessera::jinja
