#include "engine/runtime/tokenizer_texts.h"

namespace tessera::grammar {

std::vector<std::string> tokenizer_texts(const Tokenizer& tokenizer, size_t vocab_size) {
  const Vocab& vocab = tokenizer.vocab();
  std::vector<std::string> texts(vocab_size);
  for (size_t id = 0; id < texts.size() && id < vocab.size(); ++id) {
    const TokenKind kind = vocab.kinds[id];
    if (kind == TokenKind::kNormal || kind == TokenKind::kByte || kind == TokenKind::kUserDefined) {
      texts[id] = tokenizer.token_bytes(TokenId(id));
    }
  }
  return texts;
}

}  // namespace tessera::grammar
