// The scheduler driving the real engine: with a KV cache too small for all
// requests at once, sequences are preempted and recomputed, and every request
// still ends with the greedy tokens it gets with room to spare.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/runtime/model_runner.h"
#include "engine/core/error.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "quant/schemes.h"
#include "scheduler/draft_model.h"
#include "scheduler/scheduler.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct Served {
  std::map<uint64_t, std::vector<int32_t>> outputs;
  SchedulerStats stats;
};

Served serve(ModelRunner& runner, int32_t pages, const SpeculativeConfig& speculative = {}, float temperature = 0.0f,
             DraftModel* draft = nullptr) {
  SchedulerLimits limits;
  limits.speculative = speculative;
  limits.max_batch_tokens = 64;
  limits.prefill_chunk = 16;
  limits.max_model_len = 256;
  Scheduler scheduler(limits, pages, runner.page_size());
  std::map<uint64_t, std::vector<int32_t>> outputs;
  const char* prompts[] = {"The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
                           "Repeat after me: one two three four five six, one two three four five six, one two"};
  uint64_t id = 0;
  for (const char* p : prompts) {
    Request r;
    r.id = ++id;
    r.prompt = runner.model().tokenizer().encode(p, {.add_special = true});
    r.sampling.temperature = temperature;
    r.sampling.seed = 1234 + id;
    r.max_new_tokens = 24;
    EXPECT_EQ(scheduler.submit(r, [&outputs](const RequestEvent& e) {
      if (e.has_token) outputs[e.request_id].push_back(e.token.id);
    }), Admission::kAccepted);
  }
  while (scheduler.has_work()) {
    StepPlan plan = scheduler.schedule();
    if (draft) draft->propose(plan, scheduler.draft_jobs());
    scheduler.postprocess(plan, runner.step(plan));
  }
  // The last plan tells the engine which sequences ended; it keeps none.
  StepPlan last = scheduler.schedule();
  if (draft) draft->propose(last, scheduler.draft_jobs());
  runner.step(last);
  EXPECT_EQ(runner.known_sequences(), 0u);
  if (draft) EXPECT_EQ(draft->known_sequences(), 0u);
  return {outputs, scheduler.stats()};
}

std::shared_ptr<Backend> cpu_backend() {
  return std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt});
}

ModelRunner smollm2_runner(const std::string& path) {
  RunnerConfig config;
  config.kv_budget_bytes = 32ull << 20;
  return ModelRunner(cpu_backend(), path, config);
}

TEST(SchedulerWithEngine, KvExhaustionPreemptsAndStillCompletesIdentically) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner runner = smollm2_runner(path);
  const Served roomy = serve(runner, int32_t(runner.kv_cache().n_pages()));
  const Served tight = serve(runner, 7);  // 112 positions for four sequences of ~33
  EXPECT_EQ(roomy.stats.preemptions, 0u);
  EXPECT_GT(tight.stats.preemptions, 0u);
  ASSERT_EQ(roomy.outputs.size(), 4u);
  for (const auto& [id, tokens] : roomy.outputs) {
    EXPECT_EQ(tokens.size(), 24u);
    EXPECT_EQ(tight.outputs.at(id), tokens) << "request " << id;
  }
}

// Prompt-lookup speculation verifies its proposals with the draws of one
// token at a time: greedy and seeded sampling give the same tokens with it
// as without, while proposals are made and some accepted, and still when
// the cache is so tight that sequences are preempted.
TEST(SchedulerWithEngine, SpeculationGivesTheSameTokens) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner runner = smollm2_runner(path);
  SpeculativeConfig ngram;
  ngram.method = "ngram";
  ngram.prompt_lookup_min = 1;
  for (const float temperature : {0.0f, 0.8f}) {
    const Served plain = serve(runner, int32_t(runner.kv_cache().n_pages()), {}, temperature);
    const Served fast = serve(runner, int32_t(runner.kv_cache().n_pages()), ngram, temperature);
    const Served tight = serve(runner, 6, ngram, temperature);
    EXPECT_EQ(plain.stats.draft_tokens, 0u);
    EXPECT_GT(fast.stats.draft_tokens, 0u);
    EXPECT_GT(fast.stats.accepted_tokens, 0u);
    EXPECT_LT(fast.stats.accepted_tokens, fast.stats.draft_tokens);
    EXPECT_GT(tight.stats.preemptions, 0u);
    for (const auto& [id, tokens] : plain.outputs) {
      EXPECT_EQ(fast.outputs.at(id), tokens) << "request " << id << " at temperature " << temperature;
      EXPECT_EQ(tight.outputs.at(id), tokens) << "request " << id << " at temperature " << temperature << ", preempted";
    }
  }
}

// A draft model's proposals are verified the same way: with the served
// model itself as its draft nearly every proposal is accepted; with a draft
// that rounds the same weights to 4 bits (quantized at load) some are not,
// and the draft goes back to the last accepted token. Either way every
// request gets the tokens it gets without speculation, also when the served
// cache is so tight that sequences are preempted and when the draft's cache
// is so small that it must drop sequences to draft for others, and when
// prompts reach the draft a few tokens a step.
TEST(SchedulerWithEngine, DraftModelProposalsGiveTheSameTokens) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner runner = smollm2_runner(path);
  const int32_t roomy = int32_t(runner.kv_cache().n_pages());
  auto draft_of = [&](std::optional<quant::SchemeChoice> quantize, int64_t pages, int max_tokens = 2048) {
    RunnerConfig config;
    config.kv_pages = pages;
    config.capacity.max_tokens = max_tokens;
    config.load.quantize = quantize;
    return std::make_unique<DraftModel>(std::make_unique<ModelRunner>(cpu_backend(), path, config), runner.model());
  };
  SpeculativeConfig spec;
  spec.method = "draft_model";
  spec.num_speculative_tokens = 4;
  // Each draft serves both temperatures: it keeps no sequence between runs
  // (serve checks), and quantizing one at load is most of this test's time.
  const auto same = draft_of(std::nullopt, roomy);
  const auto rounded = draft_of(quant::scheme_choice("a16w4", 32), roomy);
  const auto small = draft_of(quant::scheme_choice("a16w4", 32), 4);  // 64 positions for four sequences of ~33
  const auto narrow = draft_of(std::nullopt, roomy, 8);  // prompts reach the draft 8 tokens a step
  for (const float temperature : {0.0f, 0.8f}) {
    const Served plain = serve(runner, roomy, {}, temperature);
    const Served self = serve(runner, roomy, spec, temperature, same.get());
    const Served other = serve(runner, roomy, spec, temperature, rounded.get());
    const Served tight = serve(runner, 6, spec, temperature, rounded.get());
    const Served cramped = serve(runner, roomy, spec, temperature, small.get());
    const Served chunked = serve(runner, roomy, spec, temperature, narrow.get());
    EXPECT_GT(self.stats.draft_tokens, 0u);
    if (temperature == 0.0f) EXPECT_EQ(self.stats.accepted_tokens, self.stats.draft_tokens);
    EXPECT_GT(other.stats.accepted_tokens, 0u);
    EXPECT_LT(other.stats.accepted_tokens, other.stats.draft_tokens);
    EXPECT_GT(tight.stats.preemptions, 0u);
    EXPECT_GT(cramped.stats.draft_tokens, 0u);
    EXPECT_GT(chunked.stats.draft_tokens, 0u);
    EXPECT_LT(chunked.stats.draft_tokens, self.stats.draft_tokens);
    if (temperature == 0.0f) EXPECT_EQ(chunked.stats.accepted_tokens, chunked.stats.draft_tokens);
    for (const auto& [id, tokens] : plain.outputs) {
      const std::string where = "request " + std::to_string(id) + " at temperature " + std::to_string(temperature);
      EXPECT_EQ(self.outputs.at(id), tokens) << where << ", the model as its own draft";
      EXPECT_EQ(other.outputs.at(id), tokens) << where << ", a 4-bit draft";
      EXPECT_EQ(tight.outputs.at(id), tokens) << where << ", preempted";
      EXPECT_EQ(cramped.outputs.at(id), tokens) << where << ", a draft cache of 4 pages";
      EXPECT_EQ(chunked.outputs.at(id), tokens) << where << ", a draft taking 8 tokens a step";
    }
  }
}

// A draft must share the served model's tokenizer: its proposals are token ids.
TEST(SchedulerWithEngine, DraftModelWithAnotherTokenizerIsRefused) {
  const std::string served = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  const std::string other = test::model_dir() + "/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(served) || !std::filesystem::exists(other)) GTEST_SKIP() << "models not fetched";
  ModelRunner runner = smollm2_runner(served);
  RunnerConfig config;
  config.kv_pages = 8;
  try {
    DraftModel draft(std::make_unique<ModelRunner>(cpu_backend(), other, config), runner.model());
    FAIL() << "a Gemma 3 draft for SmolLM2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a draft must share the tokenizer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
