// Requests that compute only their prompt, through the scheduler and the
// real engine. Prompt scoring: each prompt token after the first gets the
// log-probability the logits before it give (taken here from one step over
// the whole prompt), exactly once, whether the prompt runs in chunks, beside
// a request with the same prompt whose pages the prefix cache holds, or is
// preempted and recomputed. Embeddings: the pooled final hidden states are
// those of one step over the whole prompt, the same ways.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/model_runner.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "scheduler/scheduler.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

constexpr uint64_t kScoredId = 2;

ModelRunner smollm2_runner(const std::string& path) {
  RunnerConfig config;
  config.kv_budget_bytes = 32ull << 20;
  return ModelRunner(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), path, config);
}

// Every prompt position's logits ([n][vocab]), or its final hidden states
// ([n][d_model]), from one engine step.
StepResult one_step(ModelRunner& runner, const std::vector<int32_t>& prompt, bool hidden) {
  StepPlan plan;
  NewSequence& fresh = plan.new_sequences.emplace_back();
  fresh.seq_id = 1;
  fresh.tokens = prompt;
  fresh.prompt_len = uint32_t(prompt.size());
  SequenceStep& step = plan.steps.emplace_back();
  step.seq_id = 1;
  step.tokens = prompt;
  step.all_logits = !hidden;
  if (hidden) step.hidden = HiddenStates::kAll;
  for (int32_t p = 0; p * runner.page_size() < int32_t(prompt.size()); ++p) step.pages.push_back(p);
  StepResult result = runner.step(plan);
  StepPlan last;
  last.finished = {1};
  runner.step(last);
  return result;
}

std::vector<int32_t> long_prompt(const ModelRunner& runner) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += "The old lighthouse keeper climbed the spiral stairs every evening, counting each step. ";
  return runner.model().tokenizer().encode(text, {.add_special = true});
}

struct Scored {
  std::vector<SampledToken> scores;    // of request kScoredId, in the order reported
  std::vector<int32_t> tokens;         // its output
  std::vector<int32_t> plain_tokens;   // the output of the plain request beside it
  std::vector<float> embedding;        // its pooled hidden state
  FinishReason finish = FinishReason::kNone;
  int cached_prompt_tokens = -1;
  uint64_t preemptions = 0;
};

// A plain request (id 1) and one scoring (or embedding, with `pooling`) the
// same prompt (id 2): submitted together, or the second once the first is
// done (its prompt's pages then in the prefix cache).
Scored run_both(ModelRunner& runner, int32_t pages, const std::vector<int32_t>& prompt, int max_new_tokens, bool together,
                Pooling pooling = Pooling::kNone) {
  SchedulerLimits limits;
  limits.max_batch_tokens = 64;
  limits.prefill_chunk = 48;
  limits.max_model_len = 512;
  Scheduler scheduler(limits, pages, runner.page_size());
  Scored out;
  auto drain = [&] {
    while (scheduler.has_work()) {
      StepPlan plan = scheduler.schedule();
      scheduler.postprocess(plan, runner.step(plan));
    }
  };
  for (uint64_t id : {uint64_t(1), kScoredId}) {
    Request r;
    r.id = id;
    r.prompt = prompt;
    r.sampling.temperature = 0.0f;
    r.max_new_tokens = id == kScoredId ? max_new_tokens : 8;
    if (id == kScoredId && pooling == Pooling::kNone) r.prompt_logprobs = 2;
    if (id == kScoredId) r.pooling = pooling;
    EXPECT_EQ(scheduler.submit(r, [&out](const RequestEvent& e) {
      if (e.request_id != kScoredId) {
        if (e.has_token) out.plain_tokens.push_back(e.token.id);
        return;
      }
      out.scores.insert(out.scores.end(), e.prompt_logprobs.begin(), e.prompt_logprobs.end());
      if (e.has_token) out.tokens.push_back(e.token.id);
      if (e.cached_prompt_tokens >= 0) out.cached_prompt_tokens = e.cached_prompt_tokens;
      if (e.finish != FinishReason::kNone) out.finish = e.finish;
      if (!e.embedding.empty()) out.embedding = e.embedding;
    }), Admission::kAccepted);
    if (!together) drain();
  }
  drain();
  runner.step(scheduler.schedule());
  EXPECT_EQ(runner.known_sequences(), 0u);
  out.preemptions = scheduler.stats().preemptions;
  return out;
}

TEST(PromptLogprobs, EachPromptTokenScoredOnceAsOneStepScoresIt) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner reference = smollm2_runner(path);
  const std::vector<int32_t> prompt = long_prompt(reference);
  ASSERT_GT(prompt.size(), 130u);  // more rows than one step returns
  const std::vector<float> logits = one_step(reference, prompt, false).sequences.at(0).logits;
  const size_t vocab = logits.size() / prompt.size();

  ModelRunner runner = smollm2_runner(path);
  const int32_t roomy = int32_t(runner.kv_cache().n_pages());
  const int32_t tight = int32_t((prompt.size() + 8) / size_t(runner.page_size())) + 3;  // both cannot run at once
  for (const auto& [pages, max_new_tokens] : {std::pair{roomy, 0}, std::pair{roomy, 3}, std::pair{tight, 3}}) {
    const bool together = pages == tight;
    const Scored got = run_both(runner, pages, prompt, max_new_tokens, together);
    const std::string where = std::to_string(pages) + " pages, " + std::to_string(max_new_tokens) + " new tokens";
    ASSERT_EQ(got.scores.size(), prompt.size() - 1) << where;
    for (size_t i = 1; i < prompt.size(); ++i) {
      const SampledToken expected = score_token(std::span(logits).subspan((i - 1) * vocab, vocab), prompt[i], 2);
      const SampledToken& s = got.scores[i - 1];
      ASSERT_EQ(s.id, prompt[i]) << where << ", position " << i;
      EXPECT_NEAR(s.logprob, expected.logprob, 1e-5f) << where << ", position " << i;
      EXPECT_EQ(s.rank, expected.rank) << where << ", position " << i;
      ASSERT_EQ(s.top.size(), 2u);
      EXPECT_EQ(s.top[0].first, expected.top[0].first) << where << ", position " << i;
    }
    EXPECT_EQ(got.cached_prompt_tokens, 0) << where;  // computed whole, even where the prefix cache holds its pages
    EXPECT_EQ(got.finish, FinishReason::kLength) << where;
    EXPECT_EQ(got.tokens, std::vector<int32_t>(got.plain_tokens.begin(), got.plain_tokens.begin() + max_new_tokens)) << where;
    if (together) {
      EXPECT_GT(got.preemptions, 0u) << where;
    }
  }
}

// The mean of every position's final hidden state, and the last one's, as
// one step over the whole prompt gives them: also in chunks, after a plain
// request put the prompt's pages in the prefix cache (the last token's
// pooling may use them, the mean may not), and when preempted.
TEST(Embeddings, PooledAsOneStepGivesTheHiddenStates) {
  const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
  ModelRunner reference = smollm2_runner(path);
  const std::vector<int32_t> prompt = long_prompt(reference);
  const std::vector<float> hidden = one_step(reference, prompt, true).sequences.at(0).hidden;
  const size_t width = size_t(reference.model().spec().d_model);
  ASSERT_EQ(hidden.size(), prompt.size() * width);
  std::vector<double> mean(width, 0.0);
  for (size_t i = 0; i < prompt.size(); ++i) {
    for (size_t j = 0; j < width; ++j) mean[j] += double(hidden[i * width + j]) / double(prompt.size());
  }

  ModelRunner runner = smollm2_runner(path);
  const int32_t roomy = int32_t(runner.kv_cache().n_pages());
  const int32_t tight = int32_t((prompt.size() + 8) / size_t(runner.page_size())) + 3;
  for (const Pooling pooling : {Pooling::kMean, Pooling::kLast}) {
    for (const int32_t pages : {roomy, tight}) {
      const bool together = pages == tight;
      const Scored got = run_both(runner, pages, prompt, 0, together, pooling);
      const std::string where = std::string(pooling == Pooling::kMean ? "mean" : "last") + ", " + std::to_string(pages) + " pages";
      EXPECT_EQ(got.finish, FinishReason::kLength) << where;
      ASSERT_EQ(got.embedding.size(), width) << where;
      for (size_t j = 0; j < width; ++j) {
        const double expected = pooling == Pooling::kMean ? mean[j] : double(hidden[(prompt.size() - 1) * width + j]);
        ASSERT_NEAR(got.embedding[j], expected, 1e-5) << where << ", dimension " << j;
      }
      EXPECT_TRUE(got.tokens.empty()) << where;
      if (pooling == Pooling::kMean) {
        EXPECT_EQ(got.cached_prompt_tokens, 0) << where;
      } else if (!together) {
        EXPECT_GT(got.cached_prompt_tokens, 0) << where;
      }
      if (together) {
        EXPECT_GT(got.preemptions, 0u) << where;
      }
    }
  }
}

TEST(PromptLogprobs, NoOutputWithoutScoringIsRefused) {
  SchedulerLimits limits;
  Scheduler scheduler(limits, 16, 16);
  Request r;
  r.id = 1;
  r.prompt = {1, 2, 3};
  r.max_new_tokens = 0;
  EXPECT_EQ(scheduler.submit(r, nullptr), Admission::kTooLong);
  r.pooling = Pooling::kLast;
  EXPECT_EQ(scheduler.submit(r, nullptr), Admission::kAccepted);
  r.pooling = Pooling::kNone;
  r.prompt_logprobs = 0;
  EXPECT_EQ(scheduler.submit(r, nullptr), Admission::kAccepted);
  r.pooling = Pooling::kMean;
  r.max_new_tokens = 1;  // an embedding generates nothing
  EXPECT_EQ(scheduler.submit(r, nullptr), Admission::kTooLong);
}

}  // namespace
}  // namespace tessera
