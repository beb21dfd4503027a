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

std::map<uint64_t, std::vector<int32_t>> serve(ModelRunner& runner, int32_t pages, uint64_t* preemptions) {
  SchedulerLimits limits;
  limits.max_batch_tokens = 64;
  limits.prefill_chunk = 16;
  limits.max_model_len = 256;
  Scheduler scheduler(limits, pages, runner.page_size());
  std::map<uint64_t, std::vector<int32_t>> outputs;
  const char* prompts[] = {"The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
                           "The three primary colors are"};
  uint64_t id = 0;
  for (const char* p : prompts) {
    Request r;
    r.id = ++id;
    r.prompt = runner.model().tokenizer().encode(p, {.add_special = true});
    r.sampling.temperature = 0.0f;
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
  *preemptions = scheduler.stats().preemptions;
  return outputs;
}

TEST(SchedulerWithEngine, KvExhaustionPreemptsAndStillCompletesIdentically) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  RunnerConfig config;
  config.kv_budget_bytes = 32ull << 20;
  ModelRunner runner(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), path, config);
  uint64_t roomy_preemptions = 0, tight_preemptions = 0;
  const auto roomy = serve(runner, int32_t(runner.kv_cache().n_pages()), &roomy_preemptions);
  const auto tight = serve(runner, 7, &tight_preemptions);  // 112 positions for four sequences of ~33
  EXPECT_EQ(roomy_preemptions, 0u);
  EXPECT_GT(tight_preemptions, 0u);
  ASSERT_EQ(roomy.size(), 4u);
  for (const auto& [id, tokens] : roomy) {
    EXPECT_EQ(tokens.size(), 24u);
    EXPECT_EQ(tight.at(id), tokens) << "request " << id;
  }
}

}  // namespace
}  // namespace tessera
