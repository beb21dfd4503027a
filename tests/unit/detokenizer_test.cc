#include <gtest/gtest.h>

#include "models/gguf/gguf_file.h"
#include "models/tokenizer/detokenizer.h"
#include "engine/core/unicode.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

Tokenizer load(const std::string& name) {
  return Tokenizer::from_gguf(gguf::File::open(test::data_path("tokenizer-vectors/ggml-vocab-" + name + ".gguf")));
}

// Streams `ids` one at a time; every chunk must be valid UTF-8 and the chunks
// together must equal the whole decode.
void expect_stream_matches(const Tokenizer& t, const std::vector<TokenId>& ids, const std::string& whole) {
  IncrementalDetokenizer detok(t);
  std::string streamed;
  int split_points = 0;
  for (TokenId id : ids) {
    const std::string chunk = detok.push(id);
    EXPECT_TRUE(unicode::is_valid_utf8(chunk)) << "chunk is not valid UTF-8";
    if (chunk.empty()) ++split_points;
    streamed += chunk;
  }
  streamed += detok.finish();
  EXPECT_EQ(streamed, whole);
}

TEST(IncrementalDetokenizer, SentencePieceByteFallbackHoldsPartialCharacters) {
  const Tokenizer t = load("llama-spm");
  const std::string text = "llama 🦙 and snowman ☃ and 你好";
  const auto ids = t.encode(text);
  // The emoji has no token: it arrives as four byte tokens.
  expect_stream_matches(t, ids, " " + text);  // no prefix stripping while streaming
}

TEST(IncrementalDetokenizer, ByteLevelBpeSplitsCharactersAcrossTokens) {
  const Tokenizer t = load("gpt-2");
  const std::string text = "日本語のテキスト 🚀 ✅ café";
  const auto ids = t.encode(text);
  ASSERT_GT(ids.size(), unicode::decode_utf8(text).size() / 2);
  expect_stream_matches(t, ids, text);
  // At least one token boundary falls inside a character for this text.
  IncrementalDetokenizer detok(t);
  bool held_back = false;
  for (TokenId id : ids) {
    const std::string whole_piece = t.token_bytes(id);
    held_back |= detok.push(id).size() < whole_piece.size();
  }
  EXPECT_TRUE(held_back);
}

TEST(IncrementalDetokenizer, UnfinishedCharacterBecomesReplacementAtFinish) {
  const Tokenizer t = load("llama-spm");
  IncrementalDetokenizer detok(t);
  const TokenId lead = t.vocab().find("<0xF0>");
  ASSERT_NE(lead, kNoToken);
  EXPECT_EQ(detok.push(lead), "");
  EXPECT_EQ(detok.finish(), "\xef\xbf\xbd");
}

TEST(IncrementalDetokenizer, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer t = load("llama-spm");
  IncrementalDetokenizer detok(t);
  std::string out = detok.push(t.vocab().find("<0xFF>"));
  out += detok.push(t.vocab().find("<0x41>"));
  out += detok.finish();
  EXPECT_EQ(out, "\xef\xbf\xbd" "A");
}

}  // namespace
}  // namespace tessera
