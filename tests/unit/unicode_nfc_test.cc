// NFC against Python's unicodedata.normalize (tests/data/tokenizer-goldens/
// nfc.json, scripts/gen_nfc_tables.py), and its bounds on hostile input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/tokenizer/unicode_nfc.h"
#include "tests/unit/test_files.h"

namespace tessera::unicode {
namespace {

TEST(UnicodeNfc, MatchesPythonUnicodedata) {
  const auto goldens = nlohmann::json::parse(test::read_file(test::data_path("tokenizer-goldens/nfc.json")));
  size_t checked = 0;
  for (const auto& c : goldens["cases"]) {
    const std::string in = c[0].get<std::string>(), expected = c[1].get<std::string>();
    ASSERT_EQ(to_nfc(in), expected) << "case " << checked;
    ++checked;
  }
  EXPECT_GT(checked, 5000u);
}

TEST(UnicodeNfc, LeavesTextBelowCombiningMarksAlone) {
  EXPECT_EQ(to_nfc("plain ASCII, caf\xC3\xA9"), "plain ASCII, caf\xC3\xA9");
  EXPECT_EQ(to_nfc("cafe\xCC\x81"), "caf\xC3\xA9");  // e + U+0301 composes
}

TEST(UnicodeNfc, LongRunsOfMarksStayBounded) {
  std::string text = "a";
  for (int i = 0; i < 200000; ++i) text += i % 2 ? "\xCC\x81" : "\xCC\xA7";  // U+0301 / U+0327, out of order
  const std::string out = to_nfc(text);
  // The cedillas (class 202) sort before the acutes (230); the first acute
  // then composes with the a, past the cedillas that do not block it.
  EXPECT_EQ(out.size(), text.size() - 1);
  EXPECT_EQ(out.substr(0, 4), "\xC3\xA1\xCC\xA7");
}

}  // namespace
}  // namespace tessera::unicode
