// tokenizer.json loading against the `tokenizers` library's own ids
// (tests/data/hf/expected.json, from scripts/gen_hf_fixtures.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "models/tokenizer/load_tokenizer.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

class HfTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizer, MatchesTokenizersLibrary) {
  const auto expected = nlohmann::json::parse(test::read_file(test::data_path("hf/expected.json")));
  const Tokenizer t = load_tokenizer(test::data_path("hf/" + GetParam() + "/tokenizer.json"));
  int checked = 0;
  for (const auto& probe : expected["tokenizers"][GetParam()]) {
    const std::string text = probe["text"];
    const auto want = probe["ids"].get<std::vector<TokenId>>();
    EXPECT_EQ(t.encode(text, {.add_special = false, .parse_special = true}), want) << "'" << text << "'";
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST_P(HfTokenizer, DecodesBackToTheText) {
  const Tokenizer t = load_tokenizer(test::data_path("hf/" + GetParam() + "/tokenizer.json"));
  for (const std::string text : {"Hello world", "café 12345", "你好 🦙"}) EXPECT_EQ(t.decode(t.encode(text)), text);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfTokenizer, ::testing::Values("tiny-sharded", "spm-bpe"),
                         [](const auto& info) { return info.param == "spm-bpe" ? std::string("spm_bpe") : std::string("byte_level"); });

TEST(HfTokenizerConfig, SpecialTokensFromTokenizerConfig) {
  const Tokenizer t = load_tokenizer(test::data_path("hf/tiny-sharded"));
  EXPECT_EQ(t.vocab().eos, t.vocab().find("<|im_end|>"));
  EXPECT_EQ(t.vocab().bos, kNoToken);
  EXPECT_FALSE(t.vocab().add_bos);
}

TEST(HfTokenizerErrors, UnsupportedPartsAreNamed) {
  const auto expect_error = [](const std::string& json, const std::string& fragment) {
    try {
      Tokenizer::from_hf_json(json, "", "test.json");
      ADD_FAILURE() << "accepted: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "model type 'Unigram' is not supported");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "NFKC"}})",
               "normalizer 'NFKC' is not supported");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})", "is not two tokens");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}}})", "has no integer id");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"}})",
               "missing ')'");
  expect_error(R"({"model": 5})", "test.json");
  expect_error("{", "not valid JSON");
}

}  // namespace
}  // namespace tessera
