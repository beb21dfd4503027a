#pragma once
// A small backtracking regular-expression engine over code points, for the
// pre-tokenizer patterns of GGUF and Hugging Face tokenizers. It supports
// what those patterns use: literals, classes with ranges and \p{..}
// categories, \s \d \w, groups (?:..) (?i:..), lookahead (?=..) (?!..),
// alternation, greedy and lazy quantifiers, ^ and $. Matching has a step
// budget, so no pattern can hang the server.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

class Regex {
 public:
  // Throws tessera::Error naming the pattern and position on a syntax error
  // or an unsupported construct.
  explicit Regex(std::string_view pattern_utf8);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Non-overlapping, non-empty matches, leftmost first, as [begin, end) code
  // point offsets.
  std::vector<std::pair<size_t, size_t>> find_all(std::u32string_view text) const;

  const std::string& pattern() const { return pattern_; }

  struct Node;

 private:
  std::string pattern_;
  std::unique_ptr<std::vector<std::vector<Node>>> alternatives_;
};

// Splits `text` at the matches of `regex`, keeping both the matches and the
// text between them as pieces (the "isolated" behaviour of tokenizers).
std::vector<std::u32string> split_isolated(const Regex& regex, std::u32string_view text);

}  // namespace tessera
