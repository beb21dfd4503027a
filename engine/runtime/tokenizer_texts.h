#pragma once
// What an output grammar sees of a tokenizer's tokens.
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace tessera::grammar {

// texts[id] for ids below `vocab_size` (the model's logits, which may
// exceed the tokenizer's vocabulary): a token's bytes, or nothing for tokens
// no grammar may produce (control and unused tokens, ids past the tokenizer's).
std::vector<std::string> tokenizer_texts(const Tokenizer& tokenizer, size_t vocab_size);

}  // namespace tessera::grammar
