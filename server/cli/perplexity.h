#pragma once
// Perplexity by llama-perplexity's method: the text is tokenized once (with
// BOS), cut into chunks of `ctx` tokens, each chunk starts with BOS, and only
// the second half of each chunk is scored, so every scored token has at
// least ctx/2 tokens of context.
#include <cstdint>
#include <functional>
#include <string>

#include "engine/runtime/model_runner.h"

namespace tessera::cli {

struct PerplexityResult {
  double ppl = 0.0;
  double error = 0.0;  // one standard error
  int64_t chunks = 0;
  int64_t scored = 0;
  double tokens_per_s = 0.0;
};

// `max_chunks` 0: every whole chunk. `on_chunk(done, running ppl)` after each.
PerplexityResult measure_perplexity(ModelRunner& runner, const std::string& text, int ctx, int64_t max_chunks, int batch,
                                    const std::function<void(int64_t, double)>& on_chunk = {});

}  // namespace tessera::cli
