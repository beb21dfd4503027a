// Routing of mixture-of-experts layers: each token's top experts and their
// weights, and the grouping of a step's tokens by expert.
#include "models/moe_routing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera {
namespace {

MoeSpec spec(int n_experts, int top_k, bool normalize) { return {n_experts, top_k, normalize}; }

// Expert e's (token, weight) pairs.
std::vector<std::pair<int32_t, float>> of_expert(const ExpertRoutes& r, int e) {
  std::vector<std::pair<int32_t, float>> out;
  for (int32_t i = r.offsets[size_t(e)]; i < r.offsets[size_t(e) + 1]; ++i) out.emplace_back(r.rows[size_t(i)], r.weights[size_t(i)]);
  return out;
}

TEST(MoeRouting, PicksTheTopExpertsWithTheirSoftmaxWeights) {
  // Token 0 prefers experts 2 then 0; token 1 experts 3 then 2.
  const float scores[] = {1.0f, -1.0f, 2.0f, 0.5f,  //
                          -2.0f, 0.0f, 1.0f, 3.0f};
  ExpertRoutes r;
  route_tokens(scores, 2, spec(4, 2, false), &r);
  ASSERT_EQ(r.offsets, (std::vector<int32_t>{0, 1, 1, 3, 4}));
  auto softmax = [&](int t, int e) {
    double total = 0.0;
    for (int j = 0; j < 4; ++j) total += std::exp(double(scores[t * 4 + j]));
    return std::exp(double(scores[t * 4 + e])) / total;
  };
  const auto e0 = of_expert(r, 0), e2 = of_expert(r, 2), e3 = of_expert(r, 3);
  ASSERT_EQ(e0.size(), 1u);
  EXPECT_EQ(e0[0].first, 0);
  EXPECT_NEAR(e0[0].second, softmax(0, 0), 1e-6);
  ASSERT_EQ(e2.size(), 2u);  // both tokens, in token order
  EXPECT_EQ(e2[0].first, 0);
  EXPECT_NEAR(e2[0].second, softmax(0, 2), 1e-6);
  EXPECT_EQ(e2[1].first, 1);
  EXPECT_NEAR(e2[1].second, softmax(1, 2), 1e-6);
  ASSERT_EQ(e3.size(), 1u);
  EXPECT_NEAR(e3[0].second, softmax(1, 3), 1e-6);
}

TEST(MoeRouting, NormalisedWeightsSumToOne) {
  const float scores[] = {0.3f, 1.7f, -0.4f, 0.9f, 0.0f, 1.2f};
  ExpertRoutes r;
  route_tokens(scores, 1, spec(6, 3, true), &r);
  float total = 0.0f;
  for (float w : r.weights) total += w;
  EXPECT_NEAR(total, 1.0f, 1e-6);
  // 1.7 / 1.2 / 0.9: experts 1, 5 and 3, weights in the ratio of their exponentials.
  EXPECT_EQ(of_expert(r, 1).size(), 1u);
  EXPECT_EQ(of_expert(r, 5).size(), 1u);
  EXPECT_EQ(of_expert(r, 3).size(), 1u);
  EXPECT_NEAR(of_expert(r, 1)[0].second / of_expert(r, 5)[0].second, std::exp(0.5), 1e-5);
}

TEST(MoeRouting, EqualScoresGoToTheLowerExpert) {
  const float scores[] = {0.5f, 1.0f, 1.0f, 1.0f};
  ExpertRoutes r;
  route_tokens(scores, 1, spec(4, 2, false), &r);
  EXPECT_EQ(r.offsets, (std::vector<int32_t>{0, 0, 1, 2, 2}));
}

TEST(MoeRouting, ATokensWeightsDoNotDependOnItsBatch) {
  const float alone[] = {0.1f, 0.7f, -0.3f, 0.25f, 0.6f};
  std::vector<float> batch = {3.0f, -1.0f, 0.5f, 0.5f, 2.0f, -0.2f, 0.9f, 0.0f, 1.1f, 0.4f};
  batch.insert(batch.begin() + 5, alone, alone + 5);  // our token is row 1 of 3
  ExpertRoutes one, many;
  route_tokens(alone, 1, spec(5, 2, true), &one);
  route_tokens(batch.data(), 3, spec(5, 2, true), &many);
  for (int e = 0; e < 5; ++e) {
    for (const auto& [row, weight] : of_expert(one, e)) {
      bool found = false;
      for (const auto& [other_row, other_weight] : of_expert(many, e)) {
        if (other_row != 1) continue;
        found = true;
        EXPECT_EQ(weight, other_weight) << "expert " << e;
      }
      EXPECT_TRUE(found) << "expert " << e << " lost row " << row;
    }
  }
}

}  // namespace
}  // namespace tessera
