#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "models/tokenizer/pretokenizer.h"
#include "models/tokenizer/regex.h"
#include "engine/core/unicode.h"

namespace tessera {
namespace {

std::vector<std::string> split(const std::string& pattern, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& piece : split_isolated(Regex(pattern), unicode::decode_utf8(text))) out.push_back(unicode::encode_utf8(piece));
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Regex, Gpt2Pattern) {
  EXPECT_EQ(split(kGpt2Pattern, "Hello world's 123 !!  x\n"),
            (Pieces{"Hello", " world", "'s", " 123", " !!", " ", " x", "\n"}));
  EXPECT_EQ(split(kGpt2Pattern, "a   b"), (Pieces{"a", "  ", " b"}));
}

TEST(Regex, CaseInsensitiveGroupAndCounts) {
  EXPECT_EQ(split("(?i:'s|'t)", "IT'S it's"), (Pieces{"IT", "'S", " it", "'s"}));
  EXPECT_EQ(split("\\p{N}{1,3}", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("a{2}", "aaaaa"), (Pieces{"aa", "aa", "a"}));
}

TEST(Regex, LookaheadAndAnchors) {
  EXPECT_EQ(split("\\s+(?!\\S)", "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("\\s+$", "a  "), (Pieces{"a", "  "}));
  EXPECT_EQ(split("^a", "aaa"), (Pieces{"a", "aa"}));
  EXPECT_EQ(split("x(?=y)", "xyxz"), (Pieces{"x", "yxz"}));
}

TEST(Regex, ClassesRangesAndCategories) {
  EXPECT_EQ(split("[^\\s\\p{L}]+", "ab12 ;;cd"), (Pieces{"ab", "12", " ", ";;", "cd"}));
  EXPECT_EQ(split("[一-龥]+", "abc中文def"), (Pieces{"abc", "中文", "def"}));
  EXPECT_EQ(split("[\\x{41}-\\x{43}]+", "ABCD"), (Pieces{"ABC", "D"}));
  EXPECT_EQ(split("\\p{P}+", "a,.b"), (Pieces{"a", ",.", "b"}));
}

TEST(Regex, LazyQuantifierAndAlternationOrder) {
  EXPECT_EQ(split("a+?", "aaa"), (Pieces{"a", "a", "a"}));
  EXPECT_EQ(split("ab|abc", "abc"), (Pieces{"ab", "c"}));  // leftmost alternative wins
}

TEST(Regex, SyntaxErrorsNameThePattern) {
  for (const char* bad : {"(ab", "ab)", "[abc", "a{3,1}", "*a", "\\p{Greek}", "(?<=a)b", "\\"}) {
    try {
      Regex r(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Regex, LongInputsStayLinear) {
  const std::string spaces(200000, ' ');
  const auto pieces = split(kGpt2Pattern, spaces + "x");
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1], " x");
}

}  // namespace
}  // namespace tessera
