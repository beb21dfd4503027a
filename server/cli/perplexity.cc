#include "server/cli/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "server/cli/sequence_driver.h"

namespace tessera::cli {
namespace {

// -log p(target) under `logits`, in double.
double negative_log_likelihood(const float* logits, size_t vocab, int32_t target) {
  float max = logits[0];
  for (size_t i = 1; i < vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (size_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max));
  return std::log(sum) + double(max) - double(logits[target]);
}

}  // namespace

PerplexityResult measure_perplexity(ModelRunner& runner, const std::string& text, int ctx, int64_t max_chunks, int batch,
                                    const std::function<void(int64_t, double)>& on_chunk) {
  const Tokenizer& tokenizer = runner.model().tokenizer();
  const std::vector<int32_t> tokens = tokenizer.encode(text, {.add_special = true, .parse_special = false});
  const int64_t available = int64_t(tokens.size()) / ctx;
  PerplexityResult result;
  result.chunks = max_chunks > 0 ? std::min<int64_t>(available, max_chunks) : available;
  if (result.chunks < 1) {
    throw Error(std::to_string(tokens.size()) + " tokens of text, fewer than one chunk of " + std::to_string(ctx));
  }
  const size_t vocab = size_t(runner.model().spec().vocab_size);
  SequenceDriver seq(runner, SamplingParams{}, 0);
  double nll = 0.0, nll_sq = 0.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < result.chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx);
    if (tokenizer.vocab().add_bos) chunk[0] = tokenizer.vocab().bos;
    seq.reset();
    const std::vector<float> logits = seq.feed(chunk, batch, true, false);
    for (int j = ctx / 2; j < ctx - 1; ++j) {
      const double v = negative_log_likelihood(logits.data() + size_t(j) * vocab, vocab, chunk[size_t(j) + 1]);
      nll += v;
      nll_sq += v * v;
      ++result.scored;
    }
    if (on_chunk) on_chunk(c + 1, std::exp(nll / double(result.scored)));
  }
  const double mean = nll / double(result.scored);
  result.ppl = std::exp(mean);
  const double variance = std::max(0.0, nll_sq / double(result.scored) - mean * mean);
  result.error = result.scored > 1 ? result.ppl * std::sqrt(variance / double(result.scored - 1)) : 0.0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.tokens_per_s = double(result.chunks * ctx) / seconds;
  return result;
}

}  // namespace tessera::cli
