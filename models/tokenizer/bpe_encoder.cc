#include <queue>

#include "models/tokenizer/encoders.h"
#include "models/tokenizer/pretokenizer.h"
#include "engine/core/unicode.h"

namespace tessera {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t len;
};

struct Merge {
  int left;
  int right;
  int32_t rank;
  size_t len;
};

// Lowest rank first; among equals, the leftmost pair.
struct MergeOrder {
  bool operator()(const Merge& a, const Merge& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeWord {
 public:
  BpeWord(const Vocab& vocab, const std::string& word) : vocab_(vocab), word_(word) {}

  void encode(std::vector<TokenId>* out) {
    if (vocab_.ignore_merges && vocab_.find(word_) != kNoToken) {
      out->push_back(vocab_.find(word_));
      return;
    }
    for (size_t offset = 0; offset < word_.size();) {
      const size_t len = std::min<size_t>(size_t(unicode::utf8_sequence_length(uint8_t(word_[offset]))),
                                          word_.size() - offset);
      const int index = int(symbols_.size());
      symbols_.push_back({index - 1, offset + len == word_.size() ? -1 : index + 1, offset, len});
      offset += len;
    }
    for (size_t i = 1; i < symbols_.size(); ++i) add_merge(int(i) - 1, int(i));
    while (!queue_.empty()) {
      const Merge m = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[size_t(m.left)];
      Symbol& right = symbols_[size_t(m.right)];
      if (left.len == 0 || right.len == 0 || left.len + right.len != m.len) continue;  // stale
      left.len += right.len;
      right.len = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[size_t(right.next)].prev = m.left;
      add_merge(left.prev, m.left);
      add_merge(m.left, left.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[size_t(i)].next) {
      const Symbol& s = symbols_[size_t(i)];
      emit(word_.substr(s.begin, s.len), out);
    }
  }

 private:
  void add_merge(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[size_t(left)];
    const Symbol& r = symbols_[size_t(right)];
    std::string key;
    key.reserve(l.len + r.len + 1);
    key.append(word_, l.begin, l.len).append(1, ' ').append(word_, r.begin, r.len);
    auto it = vocab_.merge_ranks.find(key);
    if (it == vocab_.merge_ranks.end()) return;
    queue_.push({left, right, it->second, l.len + r.len});
  }

  void emit(const std::string& piece, std::vector<TokenId>* out) const {
    const TokenId id = vocab_.find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
    // A piece without a token: fall back to its bytes.
    const std::string raw = vocab_.byte_level ? byte_level_to_bytes(piece) : piece;
    for (unsigned char byte : raw) {
      const TokenId b = byte_token(vocab_, byte);
      if (b != kNoToken) out->push_back(b);
    }
  }

  const Vocab& vocab_;
  const std::string& word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Merge, std::vector<Merge>, MergeOrder> queue_;
};

}  // namespace

void encode_bpe(const Vocab& vocab, const std::vector<Regex>& pre_regexes, std::string_view text,
                std::vector<TokenId>* out) {
  const std::u32string code_points = unicode::decode_utf8(text);
  for (const std::u32string& piece : pretokenize(pre_regexes, code_points)) {
    const std::string utf8 = unicode::encode_utf8(piece);
    const std::string word = vocab.byte_level ? bytes_to_byte_level(utf8) : utf8;
    BpeWord(vocab, word).encode(out);
  }
}

}  // namespace tessera
