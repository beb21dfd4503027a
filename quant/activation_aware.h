#pragma once
// Activation-aware scaling (AWQ; SmoothQuant's migration for int8
// activations): the input channels of the weights that share one input are
// scaled by s before quantizing, W' = W diag(s), and the input by 1/s (folded
// into the operation that produces it), so that the channels the
// activations stress most keep more precision. s is chosen on a grid, per
// group of weights, by the error of the quantized product on calibration
// activations.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "quant/int_weights.h"

namespace tessera::quant {

// What calibration saw at one input: per-channel magnitudes over every token,
// and an even sample of the rows themselves.
class ChannelStats {
 public:
  ChannelStats(int64_t width, int64_t sample_stride, int64_t max_samples);
  // x is (n_tokens, width).
  void add(const float* x, int64_t n_tokens);

  int64_t width() const { return width_; }
  int64_t tokens() const { return tokens_; }
  std::vector<float> mean_abs() const;
  std::vector<float> mean_square() const;
  const std::vector<float>& max_abs() const { return max_abs_; }
  const std::vector<float>& samples() const { return samples_; }  // (sample_rows, width)
  int64_t sample_rows() const { return int64_t(samples_.size()) / width_; }

 private:
  int64_t width_, stride_, max_samples_, tokens_ = 0;
  std::vector<double> abs_sum_, sq_sum_;
  std::vector<float> max_abs_, samples_;
};

// y = x · wᵀ: x (n, cols), w (rows, cols), y (n, rows), all f32.
using MatmulFn = std::function<void(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y)>;

struct ScaleSearch {
  std::vector<float> scales;  // (cols); all ones when no scaling helped
  float alpha = 0;            // the grid point chosen
  double error = 0;           // squared output error with those scales
  double plain_error = 0;     // with no scaling (round to nearest)
  // Per weight, (rows): the range fraction each channel's groups keep, and
  // how its 4-bit groups are fit.
  std::vector<std::vector<float>> clips;
  std::vector<std::vector<RangeFit>> fits;
  std::vector<float> importance;  // (cols): each scaled input's mean square, for RangeFit::kActivation
};

// A gate and an up projection whose outputs meet in act(x·gateᵀ) ⊙ (x·upᵀ)
// before the down projection. Their errors are measured there, where they
// matter: each intermediate channel's error weighted by the squared norm of
// its column of down. Measured on gate's and up's own outputs instead, the
// search misjudges what the product loses (Qwen2.5 a16w4: +34% perplexity with only gate/up scaled, searched that
// way, against +23.6% with nothing scaled).
struct GatedPair {
  // out[i] = act(gate[i]) · up[i] for i < n.
  std::function<void(const float* gate, const float* up, int64_t n, float* out)> product;
  std::vector<float> channel_weights;  // (rows): Σ_j down[j, i]²
};

// What constrains one input's search.
struct InputOptions {
  // Per weight: its activations' policy (da8w8's v keeps 16-bit ones);
  // empty: the config's for all. The error includes the activations' own
  // int8 rounding where a weight runs with int8 activations.
  std::vector<ActivationPolicy> activations{};
  const GatedPair* gated = nullptr;  // set: the weights are a gate then an up
  // (cols) when set: the index of the scale each column shares, and each
  // shared scale's statistics are those of its columns together. o's input
  // under grouped queries: every query head that reads one value head must
  // take that head's scales, since 1/s folds into v's rows.
  std::vector<int64_t> shared_scale{};
};

// `weights`: the (rows_i, cols) f32 matrices that read the input `stats`
// describes.
ScaleSearch search_input_scales(std::span<const std::pair<const float*, int64_t>> weights, const ChannelStats& stats,
                                const IntQuantConfig& config, const MatmulFn& matmul, const InputOptions& options = {});

}  // namespace tessera::quant
