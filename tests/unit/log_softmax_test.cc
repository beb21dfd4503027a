// The vectorized log-sum-exp, top-k and rank count against straightforward
// double-precision computations of the same quantities.
#include "engine/runtime/log_softmax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace tessera {
namespace {

double exact_log_sum_exp(const std::vector<float>& v) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : v) mx = std::max(mx, double(x));
  double sum = 0.0;
  for (float x : v) sum += std::exp(double(x) - mx);
  return std::log(sum) + mx;
}

std::vector<float> random_row(size_t n, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(LogSoftmax, LogSumExpWithinAMillionthOfTheExactValue) {
  for (size_t n : {size_t(1), size_t(7), size_t(64), size_t(65), size_t(1000), size_t(151936)}) {
    for (float spread : {0.1f, 3.0f, 40.0f}) {
      const std::vector<float> v = random_row(n, spread, uint32_t(n));
      const double exact = exact_log_sum_exp(v);
      EXPECT_NEAR(log_sum_exp(v), exact, 1e-6 * std::max(1.0, std::abs(exact))) << n << " " << spread;
    }
  }
}

TEST(LogSoftmax, RuledOutTokensAddNothing) {
  std::vector<float> v = random_row(5000, 3.0f, 1);
  std::vector<float> kept(v.begin(), v.begin() + 100);
  for (size_t i = 100; i < v.size(); ++i) v[i] = -std::numeric_limits<float>::infinity();
  EXPECT_NEAR(log_sum_exp(v), exact_log_sum_exp(kept), 1e-6);
  EXPECT_EQ(log_sum_exp(std::vector<float>(9, -std::numeric_limits<float>::infinity())),
            -std::numeric_limits<float>::infinity());
}

TEST(LogSoftmax, FarBelowTheMaximumStillFinite) {
  std::vector<float> v(300, -1000.0f);
  v[17] = 50.0f;
  EXPECT_NEAR(log_sum_exp(v), 50.0, 1e-6);
}

TEST(LogSoftmax, LargestMatchesASortByValueThenId) {
  std::vector<float> v = random_row(20000, 2.0f, 7);
  // Ties across block boundaries and within one.
  for (int i : {3, 64, 65, 9000, 19999}) v[size_t(i)] = 9.5f;
  v[500] = std::numeric_limits<float>::infinity();
  v[501] = std::numeric_limits<float>::quiet_NaN();
  std::vector<int32_t> ids(v.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::erase_if(ids, [&](int32_t i) { return !std::isfinite(v[size_t(i)]); });
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return v[size_t(a)] > v[size_t(b)]; });
  for (size_t k : {size_t(1), size_t(3), size_t(5), size_t(20)}) {
    const auto got = largest(v, k);
    ASSERT_EQ(got.size(), k);
    for (size_t i = 0; i < k; ++i) {
      EXPECT_EQ(got[i].first, ids[i]) << "k " << k << " place " << i;
      EXPECT_EQ(got[i].second, v[size_t(ids[i])]);
    }
  }
  EXPECT_EQ(largest(std::vector<float>(4, -std::numeric_limits<float>::infinity()), 2).size(), 0u);
  EXPECT_EQ(largest(std::vector<float>{1.0f, 2.0f}, 5).size(), 2u);
}

TEST(LogSoftmax, CountGreaterCountsStrictlyGreater) {
  const std::vector<float> v = random_row(777, 1.0f, 3);
  for (float t : {-10.0f, -0.5f, 0.0f, v[10], 10.0f}) {
    EXPECT_EQ(count_greater(v, t), std::count_if(v.begin(), v.end(), [&](float x) { return x > t; }));
  }
}

}  // namespace
}  // namespace tessera
