// tessera perplexity: llama-perplexity's method (server/cli/perplexity.h).
// The last stdout line is the result.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/core/error.h"
#include "models/hf/hf_model_dir.h"
#include "server/cli/commands.h"
#include "server/cli/engine_options.h"
#include "server/cli/perplexity.h"

namespace tessera::cli {
namespace {

struct PerplexityOptions {
  EngineOptions engine;
  std::string file;
  int ctx = 512;
  int max_chunks = 0;  // 0: every whole chunk
  int batch = 512;
};

int run_perplexity(const PerplexityOptions& o) {
  const auto text = hf::read_text_file(o.file);
  if (!text) throw Error(o.file + ": not found");
  const std::unique_ptr<ModelRunner> runner = make_runner(o.engine, std::min(o.batch, kMaxCliBatch));
  PerplexityResult r;
  try {
    r = measure_perplexity(*runner, *text, o.ctx, o.max_chunks, o.batch,
                           [](int64_t done, double ppl) { std::fprintf(stderr, "[%lld] %.4f\n", (long long)done, ppl); });
  } catch (const Error& e) {
    throw Error(o.file + ": " + e.what());
  }
  std::fprintf(stderr, "%lld chunks of %d tokens, %lld scored, %.1f tokens/s\n", (long long)r.chunks, o.ctx, (long long)r.scored,
               r.tokens_per_s);
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.error);
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
