// Two context-parallel ranks (threads of this process, one CPU thread
// each, meeting through gloo) against one rank, on every fetched real
// model: prefills divided between the ranks give one rank's prompt logits
// and greedy tokens, alone or batched, whole or in chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/runtime/model_runner.h"
#include "engine/runtime/parallel/context_split.h"
#include "tests/unit/parallel_pair.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

using test::Generation;
using test::generate;

RunnerConfig config_with(int min_tokens) {
  RunnerConfig config;
  config.kv_budget_bytes = 96ull << 20;
  config.capacity = {1024, 16};
  config.context_min_tokens = min_tokens;
  return config;
}

struct Comparison {
  float worst = 0.0f;  // largest |logit difference|
  int same = 0;        // prompts whose greedy output is identical
};

Comparison compare(const Generation& one, const Generation& two) {
  Comparison c;
  for (size_t i = 0; i < one.tokens.size(); ++i) {
    EXPECT_EQ(one.prompt_logits[i].size(), two.prompt_logits[i].size());
    for (size_t j = 0; j < std::min(one.prompt_logits[i].size(), two.prompt_logits[i].size()); ++j) {
      c.worst = std::max(c.worst, std::fabs(one.prompt_logits[i][j] - two.prompt_logits[i][j]));
    }
    c.same += one.tokens[i] == two.tokens[i];
  }
  return c;
}

// Every prompt of at least four tokens is divided (two chunks a rank).
void compare_with_one_rank(const std::string& file) {
  const std::string path = test::model_dir() + "/" + file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << file << " not fetched (scripts/fetch-models.sh)";
  std::vector<std::vector<int32_t>> prompts;
  Generation one;
  {
    ModelRunner single(test::one_cpu_thread(), path, config_with(4));
    for (const std::string& p : test::short_prompts()) prompts.push_back(single.model().tokenizer().encode(p, {.add_special = true}));
    one = generate(single, prompts, 32, 1);
  }
  test::ParallelPair pair(path, [](int) { return config_with(4); });
  ASSERT_TRUE(pair.runner().context_parallel());
  const Generation two = pair.generate(prompts, 32, 1);
  const Generation alone = pair.generate({prompts[3]}, 32, 100);
  ASSERT_TRUE(pair.follower_error().empty()) << pair.follower_error();
  EXPECT_EQ(alone.tokens[0], two.tokens[3]);
  const Comparison c = compare(one, two);
  std::printf("%s: max |logit difference| %.2e, %d/10 greedy outputs of 32 tokens identical\n", file.c_str(), double(c.worst),
              c.same);
  EXPECT_LT(c.worst, 1e-3f);
  EXPECT_GE(c.same, 9);
}

TEST(ContextParallel, SmolLM2MatchesOneRank) { compare_with_one_rank("SmolLM2-135M-Instruct.Q4_1.gguf"); }
TEST(ContextParallel, Gemma3MatchesOneRank) { compare_with_one_rank("gemma-3-270m-q4_k_m.gguf"); }
TEST(ContextParallel, Qwen25CoderMatchesOneRank) { compare_with_one_rank("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"); }

// A prompt of several hundred tokens in chunks of 160: later chunks start
// past the first and meet the keys the ring left in both caches; decode
// then reads them.
TEST(ContextParallel, ChunkedLongPromptMatchesOneRank) {
  const std::string path = test::model_dir() + "/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "gemma-3-270m not fetched (scripts/fetch-models.sh)";
  std::string text;
  for (const std::string& p : test::short_prompts()) text += p + " a plain sentence follows the last one, and then another. ";
  std::vector<std::vector<int32_t>> prompts;
  Generation one;
  {
    ModelRunner single(test::one_cpu_thread(), path, config_with(64));
    prompts.push_back(single.model().tokenizer().encode(text + text, {.add_special = true}));
    one = generate(single, prompts, 16, 1, 160);
  }
  ASSERT_GT(prompts[0].size(), 320u);
  test::ParallelPair pair(path, [](int) { return config_with(64); });
  const Generation two = pair.generate(prompts, 16, 1, 160);
  const Comparison c = compare(one, two);
  std::printf("%zu-token prompt: max |logit difference| %.2e\n", prompts[0].size(), double(c.worst));
  EXPECT_LT(c.worst, 1e-3f);
  EXPECT_EQ(c.same, 1);
}

TEST(ContextSplit, DividesLongStepsIntoBalancedChunkPairs) {
  StepPlan plan;
  plan.steps.resize(3);
  plan.steps[0].tokens.assign(10, 1);
  plan.steps[1].tokens.assign(3, 1);  // below the threshold: whole on every rank
  plan.steps[2].tokens.assign(9, 1);
  plan.steps[2].draft = 2;  // drafts are verified whole
  const ContextSplit split(plan, 2, 4);
  EXPECT_TRUE(split.any());
  EXPECT_TRUE(split.split(0));
  EXPECT_FALSE(split.split(1));
  EXPECT_FALSE(split.split(2));
  // Chunks of 10 tokens in four: [0,2) [2,5) [5,7) [7,10).
  const auto r0 = split.ranges(0, 0), r1 = split.ranges(0, 1);
  EXPECT_EQ(r0[0].begin, 0);
  EXPECT_EQ(r0[0].end, 2);
  EXPECT_EQ(r0[1].begin, 7);
  EXPECT_EQ(r0[1].end, 10);  // rank 0 holds the last token
  EXPECT_EQ(r1[0].begin, 2);
  EXPECT_EQ(r1[1].end, 7);
  EXPECT_EQ(split.split_tokens(0), 5);
  EXPECT_EQ(split.split_tokens(1), 5);
  // Every token once, over four ranks.
  plan.steps[0].tokens.assign(1000, 1);
  const ContextSplit four(plan, 4, 0);
  std::vector<int> seen(1000, 0);
  for (int r = 0; r < 4; ++r) {
    for (const TokenRange& range : four.ranges(0, r)) {
      for (int t = range.begin; t < range.end; ++t) ++seen[size_t(t)];
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1000);
  EXPECT_FALSE(ContextSplit(plan, 1, 0).any());
}

}  // namespace
}  // namespace tessera
