// The scheduler driving the real engine: with a KV cache too small for all
// requests at once, sequences are preempted and recomputed, and every request
// still ends with the greedy tokens it gets with room to spare.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/model_runner.h"
#include "kernels/cpu/cpu_backend.h"
#include "scheduler/scheduler.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct Served {
  std::map<uint64_t, std::vector<int32_t>> outputs;
  SchedulerStats stats;
};

Served serve(ModelRunner& runner, int32_t pages, const SpeculativeConfig& speculative = {}, float temperature = 0.0f) {
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
    const StepPlan plan = scheduler.schedule();
    scheduler.postprocess(plan, runner.step(plan));
  }
  // The last plan tells the engine which sequences ended; it keeps none.
  runner.step(scheduler.schedule());
  EXPECT_EQ(runner.known_sequences(), 0u);
  return {outputs, scheduler.stats()};
}

ModelRunner smollm2_runner(const std::string& path) {
  RunnerConfig config;
  config.kv_budget_bytes = 32ull << 20;
  return ModelRunner(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), path, config);
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

}  // namespace
}  // namespace tessera
