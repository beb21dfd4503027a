// The step plan as bytes: every field survives a round trip, malformed bytes
// are clear errors, a plan that went through bytes runs to the same tokens,
// and the decoder gives the same tokens on a second, deliberately different
// backend (queued work, its own memory, portable kernels).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/core/error.h"
#include "engine/runtime/model_runner.h"
#include "engine/runtime/step_plan_codec.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "scheduler/scheduler.h"
#include "tests/unit/deferred_backend.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

StepPlan full_plan() {
  StepPlan plan;
  plan.finished = {3, 99};
  NewSequence& n = plan.new_sequences.emplace_back();
  n.seq_id = 7;
  n.tokens = {1, 2, 3, 40000};
  n.prompt_len = 3;
  n.seed = 0xdeadbeefcafe;
  SamplingParams& p = n.sampling;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = -0.5f;
  p.presence_penalty = 0.25f;
  p.logit_bias = {{5, -100.0f}, {6, 2.5f}};
  p.seed = 42;
  p.top_logprobs = 5;
  p.logprobs = true;
  p.min_tokens = 4;
  p.held_back = {2, 151645};
  p.grammar = {"root ::= \"{\" [a-z]* \"}\"\n", {2, 151645}};
  plan.new_sequences.emplace_back().seq_id = 8;
  plan.steps.push_back({7, {1, 2, 3}, 0, 0, {4, 5}, false, true});
  plan.steps.push_back({8, {9}, 12, 1, {6}, true, false});
  plan.steps.push_back({9, {4, 5, 6, 7}, 20, 2, {}, true, false, 3});
  plan.steps.push_back({10, {8, 9}, 0, 0, {7}, false, false, 0, HiddenStates::kAll});
  plan.steps.push_back({11, {8}, 5, 0, {}, false, false, 0, HiddenStates::kLast});
  return plan;
}

void expect_same(const SamplingParams& a, const SamplingParams& b) {
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.top_p, b.top_p);
  EXPECT_EQ(a.min_p, b.min_p);
  EXPECT_EQ(a.repetition_penalty, b.repetition_penalty);
  EXPECT_EQ(a.frequency_penalty, b.frequency_penalty);
  EXPECT_EQ(a.presence_penalty, b.presence_penalty);
  EXPECT_EQ(a.logit_bias, b.logit_bias);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.top_logprobs, b.top_logprobs);
  EXPECT_EQ(a.logprobs, b.logprobs);
  EXPECT_EQ(a.min_tokens, b.min_tokens);
  EXPECT_EQ(a.held_back, b.held_back);
  EXPECT_EQ(a.grammar, b.grammar);
}

TEST(StepPlanCodec, EveryFieldRoundTrips) {
  const StepPlan plan = full_plan();
  const StepPlan back = decode_step_plan(encode_step_plan(plan));
  EXPECT_EQ(back.finished, plan.finished);
  ASSERT_EQ(back.new_sequences.size(), 2u);
  EXPECT_EQ(back.new_sequences[0].seq_id, 7u);
  EXPECT_EQ(back.new_sequences[0].tokens, plan.new_sequences[0].tokens);
  EXPECT_EQ(back.new_sequences[0].prompt_len, 3u);
  EXPECT_EQ(back.new_sequences[0].seed, plan.new_sequences[0].seed);
  expect_same(back.new_sequences[0].sampling, plan.new_sequences[0].sampling);
  expect_same(back.new_sequences[1].sampling, SamplingParams{});
  EXPECT_EQ(back.steps, plan.steps);
  EXPECT_EQ(encode_step_plan(back), encode_step_plan(plan));
}

TEST(StepPlanCodec, EveryTruncationAndCorruptionIsAClearError) {
  const std::vector<uint8_t> bytes = encode_step_plan(full_plan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(decode_step_plan(std::span(bytes.data(), n)), Error) << "truncated to " << n << " bytes";
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(decode_step_plan(longer), Error);
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[0] ^= 1;
  EXPECT_THROW(decode_step_plan(bad_magic), Error);
  // A count far past the message: the finished list's length field.
  std::vector<uint8_t> huge_count = bytes;
  huge_count[6] = huge_count[7] = huge_count[8] = huge_count[9] = 0xff;
  EXPECT_THROW(decode_step_plan(huge_count), Error);
}

// Greedy and seeded sampling for a few prompts through the scheduler; each
// plan optionally through bytes first.
std::map<uint64_t, std::vector<int32_t>> generate(ModelRunner& runner, bool through_bytes, int new_tokens) {
  SchedulerLimits limits;
  limits.max_batch_tokens = 64;
  limits.prefill_chunk = 8;
  limits.max_model_len = 256;
  Scheduler scheduler(limits, int32_t(runner.kv_cache().n_pages()), runner.page_size());
  std::map<uint64_t, std::vector<int32_t>> out;
  const char* prompts[] = {"The capital of France is", "def fibonacci(n):", "Once upon a time"};
  uint64_t id = 0;
  for (const char* text : prompts) {
    Request r;
    r.id = ++id;
    r.prompt = runner.model().tokenizer().encode(text, {.add_special = true});
    r.sampling.temperature = id == 2 ? 0.8f : 0.0f;  // one seeded sampled request
    r.sampling.seed = 1234;
    r.sampling.repetition_penalty = id == 3 ? 1.3f : 1.0f;
    r.max_new_tokens = new_tokens;
    scheduler.submit(r, [&out](const RequestEvent& e) {
      if (e.has_token) out[e.request_id].push_back(e.token.id);
    });
  }
  while (scheduler.has_work()) {
    StepPlan plan = scheduler.schedule();
    if (through_bytes) plan = decode_step_plan(encode_step_plan(plan));
    scheduler.postprocess(plan, runner.step(plan));
  }
  runner.step(scheduler.schedule());  // tells the engine which sequences ended
  EXPECT_EQ(runner.known_sequences(), 0u);
  return out;
}

std::string smollm2_path() { return test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }

RunnerConfig small_config() {
  RunnerConfig config;
  config.kv_budget_bytes = 16ull << 20;
  config.capacity = {64, 8};
  return config;
}

TEST(StepPlanCodec, PlansThroughBytesGiveTheSameTokens) {
  if (!std::filesystem::exists(smollm2_path())) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner runner(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), smollm2_path(), small_config());
  const auto direct = generate(runner, false, 12);
  const auto through_bytes = generate(runner, true, 12);
  ASSERT_EQ(direct.size(), 3u);
  for (const auto& [id, tokens] : direct) {
    EXPECT_EQ(tokens.size(), 12u);
    EXPECT_EQ(through_bytes.at(id), tokens) << "request " << id;
  }
}

TEST(SecondBackend, DeferredPortableBackendGivesTheSameTokens) {
  if (!std::filesystem::exists(smollm2_path())) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner reference(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), smollm2_path(), small_config());
  auto deferred = std::make_shared<test::DeferredBackend>();
  ModelRunner other(deferred, smollm2_path(), small_config());
  const auto want = generate(reference, false, 6);
  const auto got = generate(other, true, 6);
  EXPECT_GT(deferred->queued_ops(), 1000u);  // the work really went through its queue
  ASSERT_EQ(want.size(), 3u);
  for (const auto& [id, tokens] : want) EXPECT_EQ(got.at(id), tokens) << "request " << id;
}

// A memory fraction sizes the cache from what the device reports once the
// model is loaded: fraction x total, less what is in use.
TEST(KvCacheSizing, MemoryFractionTakesWhatTheModelLeaves) {
  if (!std::filesystem::exists(smollm2_path())) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  auto backend = std::make_shared<test::DeferredBackend>(false);
  backend->pretend_memory({200ull << 20, 256ull << 20});  // 56 MiB in use of 256
  RunnerConfig config = small_config();
  config.kv_memory_fraction = 0.5;
  ModelRunner runner(backend, smollm2_path(), config);
  const KvLayout& layout = runner.kv_cache().layout();
  const int n_layers = runner.model().spec().n_layers;
  EXPECT_EQ(runner.kv_cache().n_pages(), PagedKvCache::pages_for_budget(layout, n_layers, 72ull << 20));

  config.kv_memory_fraction = 0.2;  // 51 MiB allowed, 56 in use
  try {
    ModelRunner refused(backend, smollm2_path(), config);
    FAIL() << "a fraction below the memory in use was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory fraction"), std::string::npos) << e.what();
  }
}

// Replayed decode steps read each new step's batch from the fixed buffers:
// the same tokens as running every step's ops afresh.
TEST(SecondBackend, RecordedDecodeStepsGiveTheSameTokens) {
  if (!std::filesystem::exists(smollm2_path())) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  auto plain = std::make_shared<test::DeferredBackend>(false);
  auto recording = std::make_shared<test::DeferredBackend>(true);
  ModelRunner reference(plain, smollm2_path(), small_config());
  ModelRunner replaying(recording, smollm2_path(), small_config());
  const auto want = generate(reference, false, 12);
  const auto got = generate(replaying, false, 12);
  EXPECT_EQ(plain->recordings(), 0u);
  EXPECT_GE(recording->recordings(), 1u);
  EXPECT_GE(recording->replays(), 5u);
  ASSERT_EQ(want.size(), 3u);
  for (const auto& [id, tokens] : want) EXPECT_EQ(got.at(id), tokens) << "request " << id;
}

}  // namespace
}  // namespace tessera
