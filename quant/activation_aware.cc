#include "quant/activation_aware.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace tessera::quant {
namespace {

constexpr int kGrid = 20;
constexpr int kClipSteps = 10;  // range fractions 0.95, 0.90, ... 0.50

// Round-trips each row through int8 with one scale per row, as DA8W8's
// kernels quantize activations per token.
void round_rows_to_int8(std::vector<float>& x, int64_t width) {
  for (size_t r = 0; r < x.size() / size_t(width); ++r) {
    float* row = x.data() + r * size_t(width);
    float amax = 0;
    for (int64_t c = 0; c < width; ++c) amax = std::max(amax, std::fabs(row[c]));
    if (amax == 0) continue;
    const float step = amax / 127.0f;
    for (int64_t c = 0; c < width; ++c) row[c] = std::nearbyint(row[c] / step) * step;
  }
}

// The calibration rows divided by the scales (n, cols), and the same rounded
// to int8 per row for the weights that run with int8 activations.
struct ScaledInputs {
  std::vector<float> plain, int8;
  ScaledInputs(const ChannelStats& stats, const std::vector<float>& s, bool need_plain, bool need_int8) {
    const int64_t cols = stats.width();
    std::vector<float> x(stats.samples().size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = stats.samples()[i] / s[i % size_t(cols)];
    if (need_int8) {
      int8 = x;
      round_rows_to_int8(int8, cols);
    }
    if (need_plain) plain = std::move(x);
  }
  const std::vector<float>& for_policy(ActivationPolicy p) const {
    return p == ActivationPolicy::kDynamicInt8Token ? int8 : plain;
  }
};

// Per-column statistics made one per shared scale (their mean, or their
// largest with `largest`), then spread back to every column: (cols).
std::vector<float> tie_columns(std::vector<float> v, const std::vector<int64_t>& shared, bool largest) {
  if (shared.empty()) return v;
  std::vector<double> sum(v.size(), 0.0);
  std::vector<int64_t> count(v.size(), 0);
  for (size_t j = 0; j < v.size(); ++j) {
    const size_t k = size_t(shared[j]);
    sum[k] = largest ? std::max(sum[k], double(v[j])) : sum[k] + v[j];
    ++count[k];
  }
  for (size_t j = 0; j < v.size(); ++j) {
    const size_t k = size_t(shared[j]);
    v[j] = float(largest ? sum[k] : sum[k] / double(count[k]));
  }
  return v;
}

// Candidate scales for grid point alpha: AWQ's mean|x|^alpha for 16-bit
// activations, SmoothQuant's max|x|^alpha / max|w|^(1 - alpha) for int8 ones;
// normalized to a geometric mean range around 1.
std::vector<float> candidate(float alpha, const ChannelStats& stats, const std::vector<float>& weight_max,
                             bool int8_acts, const std::vector<int64_t>& shared) {
  const std::vector<float> act = tie_columns(int8_acts ? stats.max_abs() : stats.mean_abs(), shared, int8_acts);
  std::vector<float> s(act.size());
  float lo = INFINITY, hi = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    double v = std::pow(std::max(double(act[j]), 1e-6), double(alpha));
    if (int8_acts) v /= std::pow(std::max(double(weight_max[j]), 1e-6), 1.0 - double(alpha));
    s[j] = float(std::max(v, 1e-6));
    lo = std::min(lo, s[j]);
    hi = std::max(hi, s[j]);
  }
  const float mid = std::sqrt(lo * hi);
  for (float& v : s) v /= mid;
  return s;
}

// Where the error of a quantized weight's output is measured: against the
// unquantized product, or, for a gated pair, at the gate-up product, with the
// other weight of the pair as last quantized (set_partner) or unquantized.
class OutputError {
 public:
  OutputError(std::span<const std::pair<const float*, int64_t>> weights, const ChannelStats& stats,
              const MatmulFn& matmul, const GatedPair* gated)
      : n_(stats.sample_rows()), gated_(gated) {
    for (const auto& [w, rows] : weights) {
      reference_.emplace_back(size_t(n_ * rows));  // (n, rows)
      matmul(w, rows, stats.width(), stats.samples().data(), n_, reference_.back().data());
    }
    if (!gated_) return;
    if (weights.size() != 2 || weights[0].second != weights[1].second ||
        int64_t(gated_->channel_weights.size()) != weights[0].second)
      throw Error("activation-aware scaling: a gated pair is a gate and an up of equal rows, one weight per row");
    gated_reference_.resize(reference_[0].size());
    gated_->product(reference_[0].data(), reference_[1].data(), int64_t(gated_reference_.size()),
                    gated_reference_.data());
    forget_partners();
  }

  bool gated() const { return gated_ != nullptr; }

  // Weight `wi` of a gated pair as quantized, y (n, rows): the other's errors
  // are measured with it from now on.
  void set_partner(size_t wi, const std::vector<float>& y) { (wi == 0 ? partner_gate_ : partner_up_) = y; }
  void forget_partners() {
    if (!gated_) return;
    partner_gate_ = reference_[0];
    partner_up_ = reference_[1];
  }

  // y: weight `wi`'s quantized output (n, rows); each output channel's squared error.
  std::vector<double> per_row(size_t wi, const std::vector<float>& y) const {
    const size_t rows = y.size() / size_t(n_);
    std::vector<double> errors(rows, 0.0);
    if (!gated_) {
      for (size_t i = 0; i < y.size(); ++i) {
        const double d = double(y[i]) - reference_[wi][i];
        errors[i % rows] += d * d;
      }
      return errors;
    }
    std::vector<float> product(y.size());  // (n, rows)
    const bool gate = wi == 0;
    gated_->product(gate ? y.data() : partner_gate_.data(), gate ? partner_up_.data() : y.data(), int64_t(y.size()),
                    product.data());
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = double(product[i]) - gated_reference_[i];
      errors[i % rows] += d * d;
    }
    for (size_t r = 0; r < rows; ++r) errors[r] *= gated_->channel_weights[r];
    return errors;
  }

 private:
  int64_t n_;
  const GatedPair* gated_;
  std::vector<std::vector<float>> reference_;     // per weight, (n, rows)
  std::vector<float> gated_reference_;            // (n, rows): act(x·gateᵀ) ⊙ x·upᵀ
  std::vector<float> partner_gate_, partner_up_;  // (n, rows): gate and up outputs
};

// Weight w (rows, cols) quantized with `config`, times x (n, cols) already
// divided by the scales: (n, rows).
std::vector<float> quantized_output(const float* w, int64_t rows, int64_t cols, const std::vector<float>& s,
                                    const std::vector<float>& x, int64_t n, const IntQuantConfig& config,
                                    const MatmulFn& matmul) {
  const IntMatrix q = quantize_rtn("search", w, rows, cols, config, s.data());
  std::vector<float> deq(size_t(rows * cols)), y(size_t(n * rows));
  const QuantizedLinear view = q.view("search");
  for (int64_t r = 0; r < rows; ++r) dequantize_int_row(view, r, deq.data() + r * cols);
  matmul(deq.data(), rows, cols, x.data(), n, y.data());
  return y;
}

// Each output channel's squared error for weight `wi` quantized with `config`.
std::vector<double> row_errors(size_t wi, const float* w, int64_t rows, int64_t cols, const std::vector<float>& s,
                               const std::vector<float>& x, int64_t n, const IntQuantConfig& config,
                               const MatmulFn& matmul, const OutputError& measure) {
  return measure.per_row(wi, quantized_output(w, rows, cols, s, x, n, config, matmul));
}

double total(const std::vector<double>& errors) {
  double sum = 0;
  for (double e : errors) sum += e;
  return sum;
}

// Last, for 4-bit groups, each output channel may take a least-squares fit
// of its groups' codes instead (RangeFit: weighted by w², by the inputs'
// mean squares, or by their product) where that gives it less error than
// its clipped range, as the calibration rows measure it. The product's
// choice took Qwen2.5 a16w4 awq from 6.461 to 6.422. Chosen per channel:
// one choice per matrix gave SmolLM2 a16w4 +23.6% perplexity against +21.0%.
void search_fits(size_t wi, const float* w, int64_t rows, int64_t cols, const std::vector<float>& x, int64_t n,
                 const IntQuantConfig& config, const MatmulFn& matmul, const OutputError& measure,
                 std::vector<double>& best, ScaleSearch& found) {
  std::vector<RangeFit>& fits = found.fits[wi];
  for (const RangeFit fit : {RangeFit::kMagnitude, RangeFit::kActivation, RangeFit::kProduct}) {
    IntQuantConfig fitted = config;
    fitted.range_fit = fit;
    fitted.column_importance = found.importance;
    const std::vector<double> e = row_errors(wi, w, rows, cols, found.scales, x, n, fitted, matmul, measure);
    for (int64_t r = 0; r < rows; ++r) {
      if (e[size_t(r)] < best[size_t(r)])
        best[size_t(r)] = e[size_t(r)], found.clips[wi][size_t(r)] = 1.0f, fits[size_t(r)] = fit;
    }
  }
}

// Then each output channel's group ranges shrunk (AWQ's grid down to half
// the range) to whichever fraction gives that channel the least error; the
// channels' errors are independent, so each takes its own. Queries and keys
// too (AWQ leaves them): Qwen2.5 loses 8% perplexity when they keep their
// whole ranges. 8-bit weights take one fraction per matrix, shrunk while the
// total error falls: per channel, the calibration rows pick clips that cost
// perplexity at 8 bits (Qwen2.5 a16w8 +0.55% against -0.43%).
void search_clips(std::span<const std::pair<const float*, int64_t>> weights, const ChannelStats& stats,
                  const IntQuantConfig& config, const MatmulFn& matmul, const std::vector<ActivationPolicy>& policies,
                  OutputError& measure, ScaleSearch& found) {
  const int64_t cols = stats.width(), n = stats.sample_rows();
  const auto uses = [&](ActivationPolicy p) {
    return std::find(policies.begin(), policies.end(), p) != policies.end();
  };
  const ScaledInputs inputs(stats, found.scales, uses(ActivationPolicy::kNone),
                            uses(ActivationPolicy::kDynamicInt8Token));
  found.clips.assign(weights.size(), {});
  found.fits.assign(weights.size(), {});
  found.importance = stats.mean_square();
  for (int64_t c = 0; c < cols; ++c) found.importance[size_t(c)] /= found.scales[size_t(c)] * found.scales[size_t(c)];
  found.error = 0;
  // A gate is searched with its up as plain rounding leaves it; the up then
  // with the gate as searched.
  if (measure.gated()) {
    measure.set_partner(1, quantized_output(weights[1].first, weights[1].second, cols, found.scales,
                                            inputs.for_policy(policies[1]), n, config, matmul));
  }
  for (size_t wi = 0; wi < weights.size(); ++wi) {
    const auto& [w, rows] = weights[wi];
    const std::vector<float>& x = inputs.for_policy(policies[wi]);
    std::vector<double> best = row_errors(wi, w, rows, cols, found.scales, x, n, config, matmul, measure);
    double best_total = total(best);
    std::vector<float>& clips = found.clips[wi];
    clips.assign(size_t(rows), 1.0f);
    found.fits[wi].assign(size_t(rows), RangeFit::kMinMax);
    for (int step = 1; step <= kClipSteps; ++step) {
      IntQuantConfig clipped = config;
      clipped.clip = 1.0f - 0.5f * float(step) / kClipSteps;
      const std::vector<double> e = row_errors(wi, w, rows, cols, found.scales, x, n, clipped, matmul, measure);
      if (config.bits == 8) {
        if (total(e) >= best_total) break;
        best = e, best_total = total(e);
        clips.assign(size_t(rows), clipped.clip);
        continue;
      }
      for (int64_t r = 0; r < rows; ++r) {
        if (e[size_t(r)] < best[size_t(r)]) best[size_t(r)] = e[size_t(r)], clips[size_t(r)] = clipped.clip;
      }
    }
    if (config.bits == 4 && !config.symmetric)
      search_fits(wi, w, rows, cols, x, n, config, matmul, measure, best, found);
    if (measure.gated() && wi == 0) {
      IntQuantConfig chosen = config;
      chosen.row_clips = clips;
      chosen.row_fits = found.fits[wi];
      chosen.column_importance = found.importance;
      measure.set_partner(0, quantized_output(w, rows, cols, found.scales, x, n, chosen, matmul));
    }
    // A gated pair's up, measured with the gate as searched, gives their joint error.
    found.error = measure.gated() ? total(best) : found.error + total(best);
  }
}

// The weights' squared output error with scales `s`, all quantized with
// `config`: their sum, or a gated pair's joint error at the product.
double block_error(std::span<const std::pair<const float*, int64_t>> weights, const ChannelStats& stats,
                   const std::vector<float>& s, const IntQuantConfig& config, const MatmulFn& matmul,
                   const std::vector<ActivationPolicy>& policies, OutputError& measure) {
  const auto uses = [&](ActivationPolicy p) {
    return std::find(policies.begin(), policies.end(), p) != policies.end();
  };
  const ScaledInputs inputs(stats, s, uses(ActivationPolicy::kNone), uses(ActivationPolicy::kDynamicInt8Token));
  double error = 0;
  for (size_t wi = 0; wi < weights.size(); ++wi) {
    const auto& [w, rows] = weights[wi];
    const std::vector<float> y =
        quantized_output(w, rows, stats.width(), s, inputs.for_policy(policies[wi]), stats.sample_rows(), config, matmul);
    // A gated pair: the up's error, with this gate, is their joint error.
    const double e = total(measure.per_row(wi, y));
    error = measure.gated() ? e : error + e;
    if (measure.gated()) measure.set_partner(wi, y);
  }
  measure.forget_partners();
  return error;
}

// Checks the options against the weights and the input's width.
void check_options(const InputOptions& o, size_t n_weights, int64_t cols) {
  if (!o.activations.empty() && o.activations.size() != n_weights)
    throw Error("activation-aware scaling: one policy per weight");
  if (o.shared_scale.empty()) return;
  if (int64_t(o.shared_scale.size()) != cols) throw Error("activation-aware scaling: one shared scale per column");
  for (const int64_t k : o.shared_scale) {
    if (k < 0 || k >= cols) throw Error("activation-aware scaling: shared scale index out of range");
  }
}

}  // namespace

ChannelStats::ChannelStats(int64_t width, int64_t sample_stride, int64_t max_samples)
    : width_(width),
      stride_(std::max<int64_t>(sample_stride, 1)),
      max_samples_(max_samples),
      abs_sum_(size_t(width)),
      sq_sum_(size_t(width)),
      max_abs_(size_t(width)) {}

void ChannelStats::add(const float* x, int64_t n_tokens) {
  for (int64_t t = 0; t < n_tokens; ++t, ++tokens_) {
    const float* row = x + t * width_;
    for (int64_t c = 0; c < width_; ++c) {
      abs_sum_[size_t(c)] += std::fabs(row[c]);
      sq_sum_[size_t(c)] += double(row[c]) * row[c];
      max_abs_[size_t(c)] = std::max(max_abs_[size_t(c)], std::fabs(row[c]));
    }
    if (tokens_ % stride_ == 0 && sample_rows() < max_samples_) samples_.insert(samples_.end(), row, row + width_);
  }
}

std::vector<float> ChannelStats::mean_square() const {
  std::vector<float> m(static_cast<size_t>(width_));
  for (size_t c = 0; c < m.size(); ++c) m[c] = tokens_ ? float(sq_sum_[c] / double(tokens_)) : 0.0f;
  return m;
}

std::vector<float> ChannelStats::mean_abs() const {
  std::vector<float> m(static_cast<size_t>(width_));
  for (size_t c = 0; c < m.size(); ++c) m[c] = tokens_ ? float(abs_sum_[c] / double(tokens_)) : 0.0f;
  return m;
}

ScaleSearch search_input_scales(std::span<const std::pair<const float*, int64_t>> weights, const ChannelStats& stats,
                                const IntQuantConfig& given, const MatmulFn& matmul, const InputOptions& options) {
  // Scales and clips are searched on min-max ranges; the fits come last.
  IntQuantConfig config = given;
  config.range_fit = RangeFit::kMinMax;
  const int64_t cols = stats.width(), n = stats.sample_rows();
  if (n == 0) throw Error("activation-aware scaling: no calibration activations");
  check_options(options, weights.size(), cols);
  const std::vector<ActivationPolicy> policies = options.activations.empty()
                                                     ? std::vector<ActivationPolicy>(weights.size(), config.activation)
                                                     : options.activations;
  const bool int8_acts = config.activation == ActivationPolicy::kDynamicInt8Token;
  std::vector<float> weight_max(size_t(cols), 0.0f);
  for (const auto& [w, rows] : weights) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        weight_max[size_t(c)] = std::max(weight_max[size_t(c)], std::fabs(w[r * cols + c]));
    }
  }
  weight_max = tie_columns(std::move(weight_max), options.shared_scale, true);
  OutputError measure(weights, stats, matmul, options.gated);
  ScaleSearch best;
  for (int k = 0; k < kGrid; ++k) {
    const float alpha = float(k) / kGrid;
    const std::vector<float> s = k == 0 ? std::vector<float>(size_t(cols), 1.0f)
                                        : candidate(alpha, stats, weight_max, int8_acts, options.shared_scale);
    const double error = block_error(weights, stats, s, config, matmul, policies, measure);
    if (k == 0 || error < best.error) {
      best.error = error;
      best.alpha = alpha;
      best.scales = s;
    }
  }
  search_clips(weights, stats, config, matmul, policies, measure, best);
  // The scales were chosen on min-max ranges, before the fits; round to
  // nearest, unscaled and fitted its own way, may still leave less error
  // (Qwen2.5 a16w4: awq 6.475 perplexity against rtn 6.455 before this).
  const std::vector<float> ones(size_t(cols), 1.0f);
  best.plain_error = block_error(weights, stats, ones, given, matmul, policies, measure);
  if (best.plain_error < best.error) {
    const bool fitted = given.bits == 4 && !given.symmetric;
    best.error = best.plain_error;
    best.alpha = 0;
    best.scales = ones;
    for (size_t wi = 0; wi < weights.size(); ++wi) {
      best.clips[wi].assign(size_t(weights[wi].second), 1.0f);
      best.fits[wi].assign(size_t(weights[wi].second), fitted ? given.range_fit : RangeFit::kMinMax);
    }
    best.importance = stats.mean_square();
  }
  return best;
}

}  // namespace tessera::quant
