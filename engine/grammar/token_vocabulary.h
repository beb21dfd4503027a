#pragma once
// The vocabulary as a grammar sees it: the bytes of each token, and the
// tokens sorted by those bytes with the prefix each shares with the one
// before it, so a walk over all tokens does the work of a common prefix once.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::grammar {

class TokenVocabulary {
 public:
  // texts[id]: the bytes of token id; empty for tokens no output constraint
  // may produce (control tokens, tokens with no text).
  explicit TokenVocabulary(std::vector<std::string> texts);

  size_t size() const { return texts_.size(); }
  const std::string& text(int32_t id) const { return texts_[size_t(id)]; }
  const std::vector<int32_t>& sorted() const { return sorted_; }
  // shared_prefix()[i]: bytes sorted()[i] has in common with sorted()[i - 1].
  const std::vector<uint32_t>& shared_prefix() const { return shared_prefix_; }
  size_t longest() const { return longest_; }

 private:
  std::vector<std::string> texts_;
  std::vector<int32_t> sorted_;
  std::vector<uint32_t> shared_prefix_;
  size_t longest_ = 0;
};

// A set of token ids over a vocabulary of fixed size.
class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(size_t vocab) : words_((vocab + 63) / 64, 0) {}
  void set(int32_t id) { words_[size_t(id) >> 6] |= uint64_t(1) << (id & 63); }
  bool test(int32_t id) const { return (words_[size_t(id) >> 6] >> (id & 63)) & 1; }
  void merge(const TokenMask& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  size_t count() const;
  bool any() const;
  // The bits, 64 tokens a word: for storing a mask and reading it back.
  const std::vector<uint64_t>& words() const { return words_; }
  static TokenMask from_words(std::vector<uint64_t> words) {
    TokenMask m;
    m.words_ = std::move(words);
    return m;
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace tessera::grammar
