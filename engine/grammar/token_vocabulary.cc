#include "engine/grammar/token_vocabulary.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace tessera::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> texts) : texts_(std::move(texts)) {
  for (size_t id = 0; id < texts_.size(); ++id) {
    if (texts_[id].empty()) continue;
    sorted_.push_back(int32_t(id));
    longest_ = std::max(longest_, texts_[id].size());
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = texts_[size_t(a)];
    const std::string& y = texts_[size_t(b)];
    return x != y ? x < y : a < b;
  });
  shared_prefix_.assign(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& x = texts_[size_t(sorted_[i - 1])];
    const std::string& y = texts_[size_t(sorted_[i])];
    const size_t n = std::min(x.size(), y.size());
    size_t k = 0;
    while (k < n && x[k] == y[k]) ++k;
    shared_prefix_[i] = uint32_t(k);
  }
}

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words_) n += size_t(std::popcount(w));
  return n;
}

bool TokenMask::any() const {
  return std::any_of(words_.begin(), words_.end(), [](uint64_t w) { return w != 0; });
}

}  // namespace tessera::grammar
