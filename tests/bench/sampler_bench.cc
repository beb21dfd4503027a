// Scoring one vocabulary row (log-probability, rank, top alternatives), as
// prompt scoring does for each prompt token and sampling with logprobs for
// each drawn token, against the scalar double-precision log-softmax it
// replaced. Vocabulary of Qwen2.5 (151,936).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/runtime/sampler.h"

namespace tessera {
namespace {

std::vector<float> logit_row() {
  std::vector<float> row(151936);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (float& x : row) x = dist(rng);
  return row;
}

void BM_ScoreToken(benchmark::State& state) {
  const std::vector<float> row = logit_row();
  int32_t token = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(score_token(row, token, int(state.range(0))));
    token = (token + 7919) % int32_t(row.size());
  }
}
BENCHMARK(BM_ScoreToken)->Arg(0)->Arg(1)->Arg(5)->Arg(20);

// The former computation: exp in double over the row, a log-softmax row
// written out, the rank counted on it, the top-k by partial sort of ids.
void BM_ScalarLogSoftmaxScore(benchmark::State& state) {
  const std::vector<float> row = logit_row();
  const size_t k = size_t(state.range(0));
  std::vector<float> lp(row.size());
  std::vector<int32_t> ids(row.size());
  int32_t token = 0;
  for (auto _ : state) {
    const float mx = *std::max_element(row.begin(), row.end());
    double sum = 0.0;
    for (float l : row) sum += std::exp(double(l - mx));
    const float log_sum = float(std::log(sum)) + mx;
    for (size_t i = 0; i < row.size(); ++i) lp[i] = row[i] - log_sum;
    const float mine = lp[size_t(token)];
    benchmark::DoNotOptimize(std::count_if(lp.begin(), lp.end(), [&](float v) { return v > mine; }));
    if (k > 0) {
      std::iota(ids.begin(), ids.end(), 0);
      std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) { return lp[size_t(a)] > lp[size_t(b)]; });
      benchmark::DoNotOptimize(ids[0]);
    }
    token = (token + 7919) % int32_t(row.size());
  }
}
BENCHMARK(BM_ScalarLogSoftmaxScore)->Arg(0)->Arg(1)->Arg(5)->Arg(20);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
