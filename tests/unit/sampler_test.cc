#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/runtime/sampler.h"

namespace tessera {
namespace {

std::vector<float> logits_of(std::initializer_list<float> v) { return std::vector<float>(v); }

TEST(Sampler, GreedyTakesTheArgmax) {
  SamplingParams p;
  p.temperature = 0.0f;
  std::mt19937_64 rng(1);
  auto l = logits_of({0.1f, 2.5f, -1.0f, 2.4f});
  EXPECT_EQ(sample_token(l, p, {}, 0, rng).id, 1);
}

TEST(Sampler, LogitBiasAndPenalties) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{3, 5.0f}};
  std::mt19937_64 rng(1);
  auto l = logits_of({0.0f, 1.0f, 0.5f, 0.0f});
  EXPECT_EQ(sample_token(l, p, {}, 0, rng).id, 3);

  SamplingParams rep;
  rep.temperature = 0.0f;
  rep.repetition_penalty = 4.0f;  // 2.0 -> 0.5 for a seen token
  auto l2 = logits_of({2.0f, 1.0f});
  const std::vector<int32_t> history{0};
  EXPECT_EQ(sample_token(l2, rep, history, 1, rng).id, 1);
  EXPECT_FLOAT_EQ(l2[0], 0.5f);

  SamplingParams freq;
  freq.temperature = 0.0f;
  freq.frequency_penalty = 1.0f;
  freq.presence_penalty = 0.5f;
  auto l3 = logits_of({3.0f, 2.0f});
  const std::vector<int32_t> with_output{1, 0, 0};  // prompt {1}, output {0, 0}
  sample_token(l3, freq, with_output, 1, rng);
  EXPECT_FLOAT_EQ(l3[0], 3.0f - 2.0f - 0.5f);
  EXPECT_FLOAT_EQ(l3[1], 2.0f);  // prompt tokens carry no frequency penalty
}

TEST(Sampler, LogprobsAreALogSoftmax) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logprobs = true;
  p.top_logprobs = 2;
  std::mt19937_64 rng(1);
  auto l = logits_of({1.0f, 2.0f, 3.0f});
  const SampledToken t = sample_token(l, p, {}, 0, rng);
  const double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_EQ(t.id, 2);
  EXPECT_NEAR(t.logprob, 3.0 - z, 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].first, 2);
  EXPECT_EQ(t.top[1].first, 1);
  EXPECT_NEAR(t.top[1].second, 2.0 - z, 1e-6);
}

// vLLM's min_tokens: the held-back ids (end of generation, stop ids) cannot
// be drawn while the output is shorter than min_tokens, and can after.
TEST(Sampler, HeldBackTokensWaitForMinTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.held_back = {0, 7};  // 7 is outside this vocabulary: ignored
  std::mt19937_64 rng(1);
  const std::vector<int32_t> prompt_and_one{5, 1};  // prompt {5}, one output token
  auto l = logits_of({9.0f, 1.0f, 2.0f});
  EXPECT_EQ(sample_token(l, p, prompt_and_one, 1, rng).id, 2);
  EXPECT_TRUE(std::isinf(l[0]) && l[0] < 0);
  const std::vector<int32_t> prompt_and_two{5, 1, 2};
  auto l2 = logits_of({9.0f, 1.0f, 2.0f});
  EXPECT_EQ(sample_token(l2, p, prompt_and_two, 1, rng).id, 0);
}

// A prompt token's score: its log-softmax value under the raw logits (no
// sampling field applies), its rank and the most likely tokens.
TEST(Sampler, ScoreTokenGivesLogprobRankAndAlternatives) {
  const auto l = logits_of({1.0f, 3.0f, 2.0f, 3.0f});
  const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
  const SampledToken t = score_token(l, 2, 2);
  EXPECT_EQ(t.id, 2);
  EXPECT_NEAR(t.logprob, 2.0 - z, 1e-6);
  EXPECT_EQ(t.rank, 3);  // two tokens are more likely
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].first, 1);  // ties: the lower id first
  EXPECT_EQ(t.top[1].first, 3);
  EXPECT_EQ(score_token(l, 1, 0).rank, 1);
  EXPECT_TRUE(score_token(l, 1, 0).top.empty());
}

std::map<int32_t, int> draw_counts(const SamplingParams& p, std::vector<float> base, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) {
    auto l = base;
    ++counts[sample_token(l, p, {}, 0, rng).id];
  }
  return counts;
}

TEST(Sampler, TopKTopPAndMinPRestrictTheCandidates) {
  const std::vector<float> base{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplingParams k;
  k.temperature = 1.0f;
  k.top_k = 2;
  for (const auto& [id, count] : draw_counts(k, base, 2000, 3)) EXPECT_LT(id, 2) << count;

  SamplingParams top_p;
  top_p.top_p = 0.79f;  // 0.5 + 0.3 reaches it
  for (const auto& [id, count] : draw_counts(top_p, base, 2000, 4)) EXPECT_LT(id, 2) << count;

  SamplingParams min_p;
  min_p.min_p = 0.35f;  // keeps p >= 0.175
  for (const auto& [id, count] : draw_counts(min_p, base, 2000, 5)) EXPECT_LT(id, 2) << count;
}

// A large vocabulary where top-p and min-p keep thousands of candidates,
// more than the first sorted prefix: the cut falls where the full sort puts it.
TEST(Sampler, FiltersOverALargeVocabularySortAsFarAsTheyReach) {
  std::vector<float> base(10000);
  for (size_t i = 0; i < base.size(); ++i) base[i] = i < 600 ? 0.0f : -1.0f - float(i % 7);
  SamplingParams top_p;
  top_p.top_p = 0.4f;  // the 600 equal best tokens hold 0.43 of the mass: the cut falls among them
  std::map<int32_t, int> seen = draw_counts(top_p, base, 1000, 8);
  for (const auto& [id, count] : seen) EXPECT_LT(id, 600) << count;
  EXPECT_GT(seen.size(), 300u);  // draws spread over more than the first 256
  SamplingParams min_p;
  min_p.min_p = 0.9f;  // keeps exactly the 600 best
  seen = draw_counts(min_p, base, 1000, 9);
  for (const auto& [id, count] : seen) EXPECT_LT(id, 600) << count;
  EXPECT_GT(seen.size(), 350u);
}

TEST(Sampler, TemperatureOneFollowsTheDistribution) {
  const std::vector<float> base{std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  SamplingParams p;
  const auto counts = draw_counts(p, base, 20000, 11);
  EXPECT_NEAR(counts.at(0) / 20000.0, 0.7, 0.02);
  EXPECT_NEAR(counts.at(1) / 20000.0, 0.2, 0.02);
  EXPECT_NEAR(counts.at(2) / 20000.0, 0.1, 0.02);
}

TEST(Sampler, SameSeedSameDraws) {
  const std::vector<float> base{0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  SamplingParams p;
  EXPECT_EQ(draw_counts(p, base, 50, 42), draw_counts(p, base, 50, 42));
  std::mt19937_64 a(5), b(5);
  for (int i = 0; i < 20; ++i) {
    auto l1 = base, l2 = base;
    EXPECT_EQ(sample_token(l1, p, {}, 0, a).id, sample_token(l2, p, {}, 0, b).id);
  }
}

}  // namespace
}  // namespace tessera
