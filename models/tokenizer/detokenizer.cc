#include "models/tokenizer/detokenizer.h"

#include "engine/core/unicode.h"

namespace tessera {

std::string IncrementalDetokenizer::push(TokenId id) {
  pending_ += tokenizer_.token_bytes(id, render_special_);
  const size_t held = unicode::incomplete_utf8_suffix(pending_);
  std::string ready = unicode::to_valid_utf8(std::string_view(pending_).substr(0, pending_.size() - held));
  pending_.erase(0, pending_.size() - held);
  return ready;
}

std::string IncrementalDetokenizer::finish() {
  std::string rest = unicode::to_valid_utf8(pending_);
  pending_.clear();
  return rest;
}

}  // namespace tessera
