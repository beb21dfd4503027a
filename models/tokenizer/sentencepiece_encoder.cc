#include <cstdio>
#include <queue>

#include "models/tokenizer/encoders.h"
#include "engine/core/unicode.h"

namespace tessera {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;  // byte range in the text
  size_t len;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t len;
};

// Highest score first; among equals, the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SentencePieceSession {
 public:
  SentencePieceSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>* out) {
    split_into_characters();
    for (size_t i = 1; i < symbols_.size(); ++i) try_add_bigram(int(i) - 1, int(i));
    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[size_t(bigram.left)];
      Symbol& right = symbols_[size_t(bigram.right)];
      if (left.len == 0 || right.len == 0 || left.len + right.len != bigram.len) continue;  // stale
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[size_t(right.next)].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[size_t(i)].next) {
      const Symbol& s = symbols_[size_t(i)];
      resegment(std::string(text_.substr(s.begin, s.len)), out);
    }
  }

 private:
  void split_into_characters() {
    for (size_t offset = 0; offset < text_.size();) {
      const size_t len = std::min<size_t>(size_t(unicode::utf8_sequence_length(uint8_t(text_[offset]))),
                                          text_.size() - offset);
      const int index = int(symbols_.size());
      symbols_.push_back({index - 1, offset + len == text_.size() ? -1 : index + 1, offset, len});
      offset += len;
    }
  }

  void try_add_bigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[size_t(left)];
    const size_t len = l.len + symbols_[size_t(right)].len;
    const std::string piece(text_.substr(l.begin, len));
    const TokenId id = vocab_.find(piece);
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.scores.empty() ? 0.0f : vocab_.scores[size_t(id)], len});
  }

  // Merges only form pieces that are in the vocabulary, so a piece that is
  // not is a single character without a token: it becomes byte tokens.
  void resegment(const std::string& piece, std::vector<TokenId>* out) {
    const TokenId id = vocab_.find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
    for (unsigned char byte : piece) out->push_back(byte_token(vocab_, byte));
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

TokenId byte_token(const Vocab& vocab, uint8_t byte) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "<0x%02X>", byte);
  TokenId id = vocab.find(hex);
  if (id != kNoToken) return id;
  id = vocab.find(std::string(1, char(byte)));
  if (id != kNoToken) return id;
  return vocab.unk;
}

void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  SentencePieceSession(vocab, text).run(out);
}

}  // namespace tessera
