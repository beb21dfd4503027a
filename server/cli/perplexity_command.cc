// tessera perplexity: llama-perplexity's method. The text is tokenized once
// (with BOS), cut into chunks of --ctx tokens, each chunk starts with BOS,
// and only the second half of each chunk is scored, so every scored token
// has at least ctx/2 tokens of context. The last stdout line is the result.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/error.h"
#include "models/hf/hf_model_dir.h"
#include "server/cli/commands.h"
#include "server/cli/engine_options.h"
#include "server/cli/sequence_driver.h"

namespace tessera::cli {
namespace {

struct PerplexityOptions {
  EngineOptions engine;
  std::string file;
  int ctx = 512;
  int max_chunks = 0;  // 0: every whole chunk
  int batch = 512;
};

// -log p(target) under `logits`, in double.
double negative_log_likelihood(const float* logits, size_t vocab, int32_t target) {
  float max = logits[0];
  for (size_t i = 1; i < vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (size_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max));
  return std::log(sum) + double(max) - double(logits[target]);
}

int run_perplexity(const PerplexityOptions& o) {
  const auto text = hf::read_text_file(o.file);
  if (!text) throw Error(o.file + ": not found");
  const std::unique_ptr<ModelRunner> owned_runner = make_runner(o.engine, std::min(o.batch, kMaxCliBatch));
  ModelRunner& runner = *owned_runner;
  const Tokenizer& tokenizer = runner.model().tokenizer();
  const std::vector<int32_t> tokens = tokenizer.encode(*text, {.add_special = true, .parse_special = false});
  const int64_t available = int64_t(tokens.size()) / o.ctx;
  const int64_t n_chunks = o.max_chunks > 0 ? std::min<int64_t>(available, o.max_chunks) : available;
  if (n_chunks < 1) {
    throw Error(o.file + ": " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of " + std::to_string(o.ctx));
  }
  const size_t vocab = size_t(runner.model().spec().vocab_size);
  const int first = o.ctx / 2;
  SequenceDriver seq(runner, SamplingParams{}, 0);
  double nll = 0.0, nll_sq = 0.0;
  int64_t count = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * o.ctx, tokens.begin() + (c + 1) * o.ctx);
    if (tokenizer.vocab().add_bos) chunk[0] = tokenizer.vocab().bos;
    seq.reset();
    const std::vector<float> logits = seq.feed(chunk, o.batch, true, false);
    for (int j = first; j < o.ctx - 1; ++j) {
      const double v = negative_log_likelihood(logits.data() + size_t(j) * vocab, vocab, chunk[size_t(j) + 1]);
      nll += v;
      nll_sq += v * v;
      ++count;
    }
    std::fprintf(stderr, "[%lld] %.4f\n", (long long)(c + 1), std::exp(nll / double(count)));
  }
  const double mean = nll / double(count);
  const double ppl = std::exp(mean);
  const double variance = std::max(0.0, nll_sq / double(count) - mean * mean);
  const double error = count > 1 ? ppl * std::sqrt(variance / double(count - 1)) : 0.0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "%lld chunks of %d tokens, %lld scored, %.1f tokens/s\n", (long long)n_chunks, o.ctx, (long long)count,
               double(n_chunks * o.ctx) / seconds);
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, error);
  return 0;
}

}  // namespace

Runner add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text file (llama-perplexity's method)");
  add_engine_options(cmd, &o->engine);
  cmd->add_option("--file,-f", o->file, "Text file")->required();
  cmd->add_option("--ctx,-c", o->ctx, "Tokens per chunk")->check(CLI::Range(4, 1 << 20))->capture_default_str();
  cmd->add_option("--chunks", o->max_chunks, "Score at most this many chunks (0: all)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--batch", o->batch, "Tokens per forward pass")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  return [o] { return run_perplexity(*o); };
}

}  // namespace tessera::cli
