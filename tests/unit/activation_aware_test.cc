// Activation-aware scaling's measures: a gate and up pair judged at their
// gated product, and scales shared by the columns that must take one.
#include "quant/activation_aware.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "quant/int_weights.h"

namespace tessera {
namespace {

std::vector<float> normal_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// y (n, rows) = x (n, cols) · wᵀ, in double.
void reference_matmul(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t o = 0; o < rows; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < cols; ++i) acc += double(x[t * cols + i]) * w[o * cols + i];
      y[t * rows + o] = float(acc);
    }
  }
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// w rounded with `config`, back to f32.
std::vector<float> rounded(const std::vector<float>& w, int64_t rows, int64_t cols,
                           const quant::IntQuantConfig& config) {
  const quant::IntMatrix m = quant::quantize_rtn("w", w.data(), rows, cols, config);
  std::vector<float> back(w.size());
  const QuantizedLinear view = m.view("w");
  for (int64_t r = 0; r < rows; ++r) quant::dequantize_int_row(view, r, back.data() + r * cols);
  return back;
}

struct GatedCase {
  static constexpr int64_t kRows = 16, kCols = 64, kTokens = 48;
  std::vector<float> gate = normal_values(size_t(kRows * kCols), 11, 0.2f);
  std::vector<float> up = normal_values(size_t(kRows * kCols), 12, 0.2f);
  std::vector<float> x = normal_values(size_t(kTokens * kCols), 13);
  quant::ChannelStats stats{kCols, 1, kTokens};
  quant::GatedPair pair;
  GatedCase() {
    stats.add(x.data(), kTokens);
    pair.product = [](const float* gate, const float* up, int64_t n, float* out) {
      for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
    };
    for (int64_t r = 0; r < kRows; ++r) pair.channel_weights.push_back(r % 4 == 0 ? 0.0f : 1.0f + float(r));
  }
  std::vector<std::pair<const float*, int64_t>> weights() const { return {{gate.data(), kRows}, {up.data(), kRows}}; }
};

// Round to nearest's error for the pair (both weights rounded, unscaled,
// with their w² fits), measured at silu(x·gateᵀ) ⊙ (x·upᵀ), each channel
// weighted by its column of down; the search leaves no more.
TEST(ActivationAware, GatedPairIsMeasuredAtItsProduct) {
  const GatedCase c;
  const quant::IntQuantConfig config{4, 32, false, ActivationPolicy::kNone};
  quant::InputOptions options;
  options.gated = &c.pair;
  const auto weights = c.weights();
  const quant::ScaleSearch found = quant::search_input_scales(weights, c.stats, config, reference_matmul, options);

  const quant::IntQuantConfig plain = config;
  const int64_t rows = GatedCase::kRows, cols = GatedCase::kCols, n = GatedCase::kTokens;
  const std::vector<float> gate_q = rounded(c.gate, rows, cols, plain), up_q = rounded(c.up, rows, cols, plain);
  std::vector<float> g(size_t(n * rows)), u(size_t(n * rows)), gq(g.size()), uq(u.size());
  reference_matmul(c.gate.data(), rows, cols, c.x.data(), n, g.data());
  reference_matmul(c.up.data(), rows, cols, c.x.data(), n, u.data());
  reference_matmul(gate_q.data(), rows, cols, c.x.data(), n, gq.data());
  reference_matmul(up_q.data(), rows, cols, c.x.data(), n, uq.data());
  double expected = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = double(silu(gq[i]) * uq[i]) - double(silu(g[i]) * u[i]);
    expected += c.pair.channel_weights[i % size_t(rows)] * d * d;
  }
  ASSERT_GT(expected, 0.0);
  EXPECT_NEAR(found.plain_error, expected, 1e-4 * expected);
  EXPECT_LE(found.error, found.plain_error);
  // Channels down never reads have no error to lower: they keep their range.
  for (size_t wi = 0; wi < 2; ++wi) {
    for (int64_t r = 0; r < rows; r += 4) {
      EXPECT_EQ(found.clips[wi][size_t(r)], 1.0f) << "weight " << wi << " row " << r;
      EXPECT_EQ(found.fits[wi][size_t(r)], quant::RangeFit::kMinMax) << "weight " << wi << " row " << r;
    }
  }
}

TEST(ActivationAware, GatedPairMustBeAGateAndAnUpOfEqualRows) {
  GatedCase c;
  const quant::IntQuantConfig config{4, 32, false, ActivationPolicy::kNone};
  quant::InputOptions options;
  options.gated = &c.pair;
  const auto pair = c.weights();
  const std::vector<std::pair<const float*, int64_t>> one = {pair[0]};
  EXPECT_THROW(quant::search_input_scales(one, c.stats, config, reference_matmul, options), Error);
  c.pair.channel_weights.pop_back();
  EXPECT_THROW(quant::search_input_scales(pair, c.stats, config, reference_matmul, options), Error);
}

// Columns that share a scale (o's input under grouped queries: query heads
// 0 and 1 read value head 0) all take it, though their activations differ.
TEST(ActivationAware, SharedScalesAreOnePerShareAndChosenFromAllItsColumns) {
  const int64_t head_dim = 32, cols = 2 * head_dim, rows = 24, tokens = 64;
  std::vector<float> x = normal_values(size_t(tokens * cols), 21);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t d = 0; d < head_dim; d += 5) x[size_t(t * cols + head_dim + d)] *= 30.0f;  // head 1's outliers
  }
  quant::ChannelStats stats(cols, 1, tokens);
  stats.add(x.data(), tokens);
  const std::vector<float> w = normal_values(size_t(rows * cols), 22);
  const std::pair<const float*, int64_t> weights[] = {{w.data(), rows}};
  quant::InputOptions options;
  for (int64_t j = 0; j < cols; ++j) options.shared_scale.push_back(j % head_dim);
  const quant::IntQuantConfig config{4, 32, false, ActivationPolicy::kNone};

  const quant::ScaleSearch found = quant::search_input_scales(weights, stats, config, reference_matmul, options);
  ASSERT_GT(found.alpha, 0.0f) << "the outliers make scaling pay";
  ASSERT_EQ(found.scales.size(), size_t(cols));
  bool differ = false;
  for (int64_t d = 0; d < head_dim; ++d) {
    EXPECT_EQ(found.scales[size_t(d)], found.scales[size_t(head_dim + d)]) << "channel " << d;
    differ = differ || found.scales[size_t(d)] != found.scales[0];
  }
  EXPECT_TRUE(differ);
  // The shared scale follows the outlier channels though only head 1 has them.
  EXPECT_GT(found.scales[0], found.scales[1]);

  options.shared_scale.back() = cols;
  EXPECT_THROW(quant::search_input_scales(weights, stats, config, reference_matmul, options), Error);
  options.shared_scale.pop_back();
  EXPECT_THROW(quant::search_input_scales(weights, stats, config, reference_matmul, options), Error);
}

}  // namespace
}  // namespace tessera
