#pragma once
// The one question every trust boundary asks of a token id (request
// fields, the model loop, the runner, the draft model, the sampler's
// inputs, the tokenizer): does it name a row of this vocabulary?
#include <cstdint>

namespace tessera {

constexpr bool token_in_vocabulary(int64_t id, int64_t vocab_size) { return id >= 0 && id < vocab_size; }

}  // namespace tessera
