// The real models' tokenizers against llama.cpp's ids (goldens from
// scripts/gen_tokenizer_goldens.py), plus behaviour that needs no model.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string show(const std::vector<TokenId>& ids) {
  std::ostringstream s;
  for (TokenId id : ids) s << ' ' << id;
  return s.str();
}

struct RealModel {
  const char* golden;
  const char* file;
};

class RealModelTokenizer : public ::testing::TestWithParam<RealModel> {};

TEST_P(RealModelTokenizer, MatchesLlamaCpp) {
  const std::string path = test::model_dir() + "/" + GetParam().file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not fetched (scripts/fetch-models.sh)";
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf::File::open(path));
  std::istringstream lines(test::read_file(test::data_path(std::string("tokenizer-goldens/") + GetParam().golden + ".jsonl")));
  int cases = 0, mismatches = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    const std::string text = from_hex(row["text_hex"].get<std::string>());
    const auto plain = tokenizer.encode(text, {.add_special = false, .parse_special = false});
    const auto special = tokenizer.encode(text, {.add_special = true, .parse_special = true});
    const auto want_plain = row["plain"].get<std::vector<TokenId>>();
    const auto want_special = row["special"].get<std::vector<TokenId>>();
    ++cases;
    if (plain != want_plain || special != want_special) {
      ++mismatches;
      ADD_FAILURE() << GetParam().golden << " '" << text << "'\n  plain want" << show(want_plain) << "\n  plain got " << show(plain)
                    << "\n  special want" << show(want_special) << "\n  special got " << show(special);
    }
  }
  EXPECT_GE(cases, 300);
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Goldens, RealModelTokenizer,
                         ::testing::Values(RealModel{"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"},
                                           RealModel{"gemma3", "gemma-3-270m-q4_k_m.gguf"}),
                         [](const auto& info) { return std::string(info.param.golden); });

class VocabFile : public ::testing::Test {
 protected:
  static Tokenizer load(const std::string& name) {
    return Tokenizer::from_gguf(gguf::File::open(test::data_path("tokenizer-vectors/ggml-vocab-" + name + ".gguf")));
  }
};

TEST_F(VocabFile, ByteLevelBpeDecodesToTheInput) {
  const Tokenizer t = load("gpt-2");
  for (const std::string text : {"Hello, world!", "  spaces  and\ttabs\n", "日本語 🦙 café", "a\x01" "b"}) {
    EXPECT_EQ(t.decode(t.encode(text)), text);
  }
}

TEST_F(VocabFile, SentencePieceDecodeDropsThePrefixSpace) {
  const Tokenizer t = load("llama-spm");
  EXPECT_EQ(t.decode(t.encode("Hello world")), "Hello world");
  EXPECT_EQ(t.decode(t.encode(" Hello")), " Hello");
  EXPECT_EQ(t.decode(t.encode("🦙 byte fallback ☃")), "🦙 byte fallback ☃");
}

TEST_F(VocabFile, SpecialTokensOnlyWhenAsked) {
  const Tokenizer t = load("llama-spm");
  const auto with_bos = t.encode("Hi", {.add_special = true});
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], t.vocab().bos);
  const auto parsed = t.encode("</s>", {.parse_special = true});
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0], t.vocab().eos);
  EXPECT_GT(t.encode("</s>").size(), 1u);  // left as text
  EXPECT_EQ(t.decode({t.vocab().eos}), "");
  EXPECT_EQ(t.decode({t.vocab().eos}, /*render_special=*/true), "</s>");
}

TEST_F(VocabFile, PlainRangesKeepControlTextAsText) {
  const Tokenizer t = load("llama-spm");
  const std::string text = "</s>A</s>B</s>";
  // The middle "</s>" (bytes 5 to 9) lies in a plain range; the others parse.
  const std::vector<ByteRange> plain = {{5, 9}};
  const auto ids = t.encode(text, {.parse_special = true, .plain_ranges = &plain});
  EXPECT_EQ(std::count(ids.begin(), ids.end(), t.vocab().eos), 2);
  EXPECT_EQ(ids.front(), t.vocab().eos);
  EXPECT_EQ(ids.back(), t.vocab().eos);
  const std::vector<ByteRange> straddling = {{3, 4}};  // overlaps the first "</s>" only
  const auto guarded = t.encode(text, {.parse_special = true, .plain_ranges = &straddling});
  EXPECT_EQ(std::count(guarded.begin(), guarded.end(), t.vocab().eos), 2);
  EXPECT_TRUE(t.has_control_text("x</s>y"));
  EXPECT_FALSE(t.has_control_text("x</ s>y"));
  EXPECT_GE(t.max_token_bytes(), 4u);
}

TEST_F(VocabFile, OutOfRangeIdIsAnError) {
  const Tokenizer t = load("gpt-2");
  EXPECT_THROW(t.token_bytes(-1), Error);
  EXPECT_THROW(t.token_bytes(TokenId(t.vocab().size())), Error);
}

}  // namespace
}  // namespace tessera
