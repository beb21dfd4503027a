#pragma once
// Streaming detokenisation: token ids in, valid UTF-8 text out, never
// splitting a character. Bytes of an unfinished character wait for the next
// token; bytes that can never form a character become U+FFFD.
#include <string>

#include "models/tokenizer/tokenizer.h"

namespace tessera {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}

  // The text that `id` completes (possibly empty).
  std::string push(TokenId id);
  // Whatever is still held back, with an unfinished character as U+FFFD.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;  // at most an unfinished character's leading bytes
};

}  // namespace tessera
