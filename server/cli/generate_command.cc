// tessera generate: one prompt in, the generated text on stdout. Load and
// timing lines go to stderr.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/model_runner.h"
#include "engine/core/op_profile.h"
#include "models/tokenizer/detokenizer.h"
#include "server/cli/commands.h"
#include "server/cli/engine_options.h"
#include "server/cli/sequence_driver.h"

namespace tessera::cli {
namespace {

struct GenerateOptions {
  EngineOptions engine;
  std::string prompt;
  int max_tokens = 64;
  float temperature = 0.8f;
  float top_p = 0.95f;
  int top_k = 40;
  float min_p = 0.05f;
  float repetition_penalty = 1.0f;
  int64_t seed = -1;
  int batch = 512;
  bool ignore_eos = false;
  bool print_ids = false;
  bool profile = false;
  bool warmup = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool is_end_of_generation(const Vocab& vocab, int32_t id) {
  for (int32_t e : vocab.end_of_generation) {
    if (e == id) return true;
  }
  return false;
}

int run_generate(const GenerateOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<ModelRunner> owned_runner = make_runner(o.engine, std::min(o.batch, kMaxCliBatch));
  ModelRunner& runner = *owned_runner;
  std::fprintf(stderr, "loaded %s (%s, %d layers) in %.2f s\n", o.engine.model.c_str(), runner.model().spec().architecture.c_str(),
               runner.model().spec().n_layers, seconds_since(t0));
  const Tokenizer& tokenizer = runner.model().tokenizer();
  const std::vector<int32_t> prompt = tokenizer.encode(o.prompt, {.add_special = true, .parse_special = true});
  if (prompt.empty()) throw Error("the prompt has no tokens");
  SamplingParams params;
  params.temperature = o.temperature;
  params.top_p = o.top_p;
  params.top_k = o.top_k;
  params.min_p = o.min_p;
  params.repetition_penalty = o.repetition_penalty;
  const uint64_t seed = o.seed >= 0 ? uint64_t(o.seed) : std::random_device{}();
  SequenceDriver seq(runner, params, seed);
  IncrementalDetokenizer detok(tokenizer);
  std::vector<int32_t> ids;

  if (o.warmup) {
    // The prompt and one decode step once, untimed, as llama-bench warms up:
    // buffers grown, pages touched, threads awake. The sequence then starts
    // again from nothing, with the same seed.
    seq.feed(prompt, o.batch, false, true);
    if (seq.length() + 1 < size_t(runner.model().spec().max_context)) seq.next();
    seq.reset();
  }
  OpProfile profile;
  if (o.profile) runner.set_profile(&profile);
  t0 = std::chrono::steady_clock::now();
  seq.feed(prompt, o.batch, false, o.max_tokens > 0);
  const double prefill_s = seconds_since(t0);
  if (o.profile) {
    std::fputs(profile.format("prefill profile").c_str(), stderr);
    profile.reset();
  }
  t0 = std::chrono::steady_clock::now();
  int generated = 0;
  while (generated < o.max_tokens) {
    const SampledToken tok = generated == 0 ? seq.last() : seq.next();
    if (!o.ignore_eos && is_end_of_generation(tokenizer.vocab(), tok.id)) break;
    ++generated;
    if (o.print_ids) {
      ids.push_back(tok.id);
    } else {
      std::fputs(detok.push(tok.id).c_str(), stdout);
      std::fflush(stdout);
    }
    if (seq.length() + 1 >= size_t(runner.model().spec().max_context)) break;
  }
  if (o.print_ids) {
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  } else {
    std::fputs(detok.finish().c_str(), stdout);
    std::fputc('\n', stdout);
  }
  const double decode_s = seconds_since(t0);
  if (o.profile) std::fputs(profile.format("decode profile").c_str(), stderr);
  std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tok/s); generated: %d tokens in %.3f s (%.1f tok/s)\n", prompt.size(),
               prefill_s, double(prompt.size()) / prefill_s, generated, decode_s, generated > 1 ? (generated - 1) / decode_s : 0.0);
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  add_engine_options(cmd, &o->engine);
  cmd->add_option("--prompt,-p", o->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens,-n", o->max_tokens, "Tokens to generate")->check(CLI::Range(0, 1 << 20))->capture_default_str();
  cmd->add_option("--temperature", o->temperature, "0 for greedy")->check(CLI::Range(0.0, 100.0))->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Nucleus sampling mass")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "0 disables")->check(CLI::Range(0, 1 << 30))->capture_default_str();
  cmd->add_option("--min-p", o->min_p, "0 disables")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--repeat-penalty", o->repetition_penalty, "1 disables")->check(CLI::Range(0.0, 100.0))->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (-1: random)")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Prompt tokens per forward pass")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep going past end-of-generation tokens");
  cmd->add_flag("--warmup", o->warmup, "Run the prompt and one decode step once, untimed, before the timed run");
  cmd->add_flag("--profile", o->profile, "Time every step of the forward pass and print where prefill and decode spend it");
  cmd->add_flag("--print-ids", o->print_ids, "Print the generated token ids as a JSON array instead of text");
  return [o] { return run_generate(*o); };
}

}  // namespace tessera::cli
