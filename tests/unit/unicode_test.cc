#include <gtest/gtest.h>

#include "engine/core/unicode.h"

namespace tessera {
namespace {

using unicode::Category;

TEST(Unicode, Categories) {
  EXPECT_EQ(unicode::category(U'a'), Category::kLetter);
  EXPECT_EQ(unicode::category(U'中'), Category::kLetter);
  EXPECT_EQ(unicode::category(U'7'), Category::kNumber);
  EXPECT_EQ(unicode::category(U'½'), Category::kNumber);
  EXPECT_EQ(unicode::category(U'!'), Category::kPunctuation);
  EXPECT_EQ(unicode::category(U'$'), Category::kSymbol);
  EXPECT_EQ(unicode::category(U'🦙'), Category::kSymbol);
  EXPECT_EQ(unicode::category(0x0301), Category::kMark);
  EXPECT_EQ(unicode::category(U' '), Category::kSeparator);
  EXPECT_EQ(unicode::category(0x10ffff), Category::kOther);
}

TEST(Unicode, WhitespaceAndLowercase) {
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', char32_t(0xa0), char32_t(0x3000), char32_t(0x2028)}) EXPECT_TRUE(unicode::is_whitespace(c));
  EXPECT_FALSE(unicode::is_whitespace(U'a'));
  EXPECT_FALSE(unicode::is_whitespace(0x200b));  // zero width space is not White_Space
  EXPECT_EQ(unicode::to_lower(U'A'), U'a');
  EXPECT_EQ(unicode::to_lower(U'Ä'), U'ä');
  EXPECT_EQ(unicode::to_lower(U'Σ'), U'σ');
  EXPECT_EQ(unicode::to_lower(U'1'), U'1');
}

TEST(Unicode, DecodeIsStructuralLikeLlamaCpp) {
  EXPECT_EQ(unicode::decode_utf8("a\xc3\xa9\xf0\x9f\xa6\x99"), std::u32string(U"aé🦙"));
  EXPECT_EQ(unicode::decode_utf8("\xc0\xaf"), std::u32string(U"/"));  // overlong, decoded by value
  EXPECT_EQ(unicode::decode_utf8("\xff"), std::u32string(1, 0xfffd));
  EXPECT_EQ(unicode::decode_utf8("\xf0\x9f\x98"), std::u32string(3, 0xfffd));  // truncated
  EXPECT_EQ(unicode::decode_utf8("\xe4" "a"), std::u32string(U"\ufffda"));
}

TEST(Unicode, StrictValidationAndRepair) {
  EXPECT_TRUE(unicode::is_valid_utf8("plain 日本 🦙"));
  EXPECT_FALSE(unicode::is_valid_utf8("\xc0\xaf"));
  EXPECT_FALSE(unicode::is_valid_utf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(unicode::is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_EQ(unicode::to_valid_utf8("a\xffz"), "a\xef\xbf\xbdz");
  EXPECT_EQ(unicode::to_valid_utf8("ok"), "ok");
}

TEST(Unicode, IncompleteSuffix) {
  EXPECT_EQ(unicode::incomplete_utf8_suffix("abc"), 0u);
  EXPECT_EQ(unicode::incomplete_utf8_suffix("a\xe4\xbd"), 2u);
  EXPECT_EQ(unicode::incomplete_utf8_suffix("a\xe4\xbd\xa0"), 0u);
  EXPECT_EQ(unicode::incomplete_utf8_suffix("\xf0"), 1u);
}

TEST(Unicode, EncodeRoundTrip) {
  const std::u32string text = U"x\u00e9\u4e2d\U0001f999";
  EXPECT_EQ(unicode::decode_utf8(unicode::encode_utf8(text)), text);
}

}  // namespace
}  // namespace tessera
