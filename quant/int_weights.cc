#include "quant/int_weights.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>
#include <vector>

#include "engine/core/error.h"

namespace tessera::quant {
namespace {

struct GroupCode {
  float scale;
  int zero;  // signed domain, [-8, 7]
};

// One group's scale (and zero point) by round to nearest over its range,
// shrunk by `clip` (values beyond it clip to its ends).
GroupCode group_code(const float* w, int64_t n, const IntQuantConfig& c, float clip) {
  float lo = 0.0f, hi = 0.0f, amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
    amax = std::max(amax, std::fabs(w[i]));
  }
  lo *= clip;
  hi *= clip;
  amax *= clip;
  if (c.bits == 8) return {amax / 127.0f, 0};
  if (c.symmetric) return {amax / 7.0f, 0};
  const float scale = std::max(hi - lo, 1e-8f) / 15.0f;
  const int zero_unsigned = std::clamp(int(std::nearbyint(-lo / scale)), 0, 15);
  return {scale, zero_unsigned - 8};
}

int quantize_value(float w, const GroupCode& g, int bits) {
  if (g.scale == 0.0f) return bits == 8 ? 0 : g.zero;
  const int q = int(std::nearbyint(w / g.scale));
  return bits == 8 ? std::clamp(q, -127, 127) : std::clamp(q + g.zero, -8, 7);
}

// One pass over a 4-bit group with g's codes: Σ importance · (w - ŵ)², and
// the scale that minimizes it with those codes held fixed.
struct GroupFit {
  float error;
  float refit_scale;
};

// Round to nearest, ties to even: std::nearbyint in the default rounding
// mode, without its library call. Adding and taking away 1.5·2^23 keeps the
// integer part exactly for |x| < 2^22; larger values round wrongly but stay
// beyond every clamp applied after, so the codes are the same.
inline float round_half_even(float x) {
  constexpr float kMagic = 12582912.0f;
  return (x + kMagic) - kMagic;
}

constexpr int64_t kMaxGroup = 4096;  // a group longer is fitted in pieces of this size

GroupFit fit_pass(const float* w, const float* importance, int64_t n, const GroupCode& g) {
  // Codes first, in a loop without a carried sum (it vectorises), then the
  // sums in element order, as the scalar loop took them.
  float codes[kMaxGroup];  // (n): each weight's code less the zero point
  float error = 0.0f, num = 0.0f, den = 0.0f;
  const float lo = float(-8 - g.zero), hi = float(7 - g.zero);  // the 4-bit codes' range, less the zero point
  for (int64_t begin = 0; begin < n; begin += kMaxGroup) {
    const int64_t len = std::min(kMaxGroup, n - begin);
    const float* wp = w + begin;
    const float* ip = importance + begin;
    if (g.scale == 0.0f) {
      std::fill(codes, codes + len, 0.0f);
    } else {
      for (int64_t i = 0; i < len; ++i) {
        const float r = round_half_even(wp[i] / g.scale);
        codes[i] = r >= lo ? (r <= hi ? r : hi) : lo;  // NaN to the bottom code, as an int conversion takes it
      }
    }
    for (int64_t i = 0; i < len; ++i) {
      const float u = codes[i];
      const float d = wp[i] - g.scale * u;
      error += ip[i] * d * d;
      num += ip[i] * wp[i] * u;
      den += ip[i] * u * u;
    }
  }
  return {error, den > 0.0f ? num / den : 0.0f};
}

constexpr int kFitSteps = 3;  // steps of range / (15 ± k / kFitSteps), k = -kFitSteps..kFitSteps
// Each step, with its nearest zero point and the two beside it, is refined
// by rounding to the refitted scale and fitting again (Lloyd's iteration
// for a uniform grid, its zero point held): kRefits rounds for the w² fit
// of round to nearest (SmolLM2 a16w4 23.46 -> 23.00, Qwen2.5 6.563 ->
// 6.455), one for AWQ's activation-weighted fit (four there gave Qwen2.5
// awq 6.501, one 6.475).
constexpr int kRefits = 4;

// A 4-bit asymmetric group's code by weighted least squares (RangeFit),
// each candidate refined `refits` times.
GroupCode fitted_group_code(const float* w, const float* importance, int64_t n, const IntQuantConfig& c, float clip, int refits) {
  GroupCode best = group_code(w, n, c, clip);
  if (best.scale == 0.0f) return best;
  float best_error = fit_pass(w, importance, n, best).error;
  const float lo = std::min(0.0f, *std::min_element(w, w + n)) * clip;
  const float range = std::max(0.0f, *std::max_element(w, w + n)) * clip - lo;
  for (int k = -kFitSteps; k <= kFitSteps; ++k) {
    const float step = range / (15.0f + float(k) / kFitSteps);
    const int nearest_zero = std::clamp(int(std::nearbyint(-lo / step)), 0, 15) - 8;
    for (int zero = std::max(nearest_zero - 1, -8); zero <= std::min(nearest_zero + 1, 7); ++zero) {
      GroupCode g{step, zero};
      for (int round = 0; round <= refits; ++round) {
        const GroupFit fit = fit_pass(w, importance, n, g);
        if (fit.error < best_error) best_error = fit.error, best = g;
        if (!(fit.refit_scale > 0.0f) || fit.refit_scale == g.scale) break;
        g.scale = fit.refit_scale;
      }
    }
  }
  return best;
}

// Each element's weight in the fit of its group (n values from column `begin`).
void fit_importance(RangeFit fit, const float* w, int64_t begin, int64_t n, const IntQuantConfig& c, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float magnitude = w[i] * w[i];
    const float activation = c.column_importance.empty() ? 0.0f : c.column_importance[size_t(begin + i)];
    out[i] = fit == RangeFit::kActivation ? activation : fit == RangeFit::kProduct ? magnitude * activation : magnitude;
  }
}

// The per-row clips and fits, and the importance an activation fit reads,
// match the matrix.
void check_row_settings(const std::string& name, const IntQuantConfig& c, int64_t rows, int64_t cols) {
  if (!c.row_clips.empty() && int64_t(c.row_clips.size()) != rows) {
    throw Error("weight '" + name + "': " + std::to_string(c.row_clips.size()) + " row clips for " +
                std::to_string(rows) + " rows");
  }
  if (!c.row_fits.empty() && int64_t(c.row_fits.size()) != rows) {
    throw Error("weight '" + name + "': " + std::to_string(c.row_fits.size()) + " row fits for " +
                std::to_string(rows) + " rows");
  }
  const auto reads_inputs = [](RangeFit f) { return f == RangeFit::kActivation || f == RangeFit::kProduct; };
  const bool uses_importance =
      reads_inputs(c.range_fit) || std::any_of(c.row_fits.begin(), c.row_fits.end(), reads_inputs);
  if (c.bits == 4 && !c.symmetric && uses_importance && int64_t(c.column_importance.size()) != cols) {
    throw Error("weight '" + name + "': activation-weighted fit needs one importance per input (" +
                std::to_string(cols) + ")");
  }
}

}  // namespace

int int4_at(const uint8_t* row, int64_t col) {
  const uint8_t byte = row[col / 2];
  const int v = (col & 1) ? byte >> 4 : byte & 0x0F;
  return v >= 8 ? v - 16 : v;
}

void int4_row(const uint8_t* row, int64_t cols, int offset, int8_t* out) {
  // A nibble v is the signed value (v ^ 8) - 8.
  const auto value = [offset](unsigned nibble) { return int8_t(int(nibble ^ 8u) - 8 + offset); };
  for (int64_t c = 0; c + 1 < cols; c += 2) {
    const uint8_t byte = row[c / 2];
    out[c] = value(byte & 0x0Fu);
    out[c + 1] = value(byte >> 4);
  }
  if (cols % 2) out[cols - 1] = value(row[cols / 2] & 0x0Fu);
}

void set_int4(uint8_t* row, int64_t col, int q) {
  const uint8_t bits = uint8_t(q & 0x0F);
  uint8_t& byte = row[col / 2];
  byte = (col & 1) ? uint8_t((byte & 0x0F) | (bits << 4)) : uint8_t((byte & 0xF0) | bits);
}

bool is_int_scheme(const WeightScheme& s) {
  return !s.scales_in_blocks && (s.storage == DType::kI8 || s.storage == DType::kInt4) && s.group_size > 0;
}

WeightScheme int_scheme(const std::string& name, const IntQuantConfig& c, int64_t cols) {
  if (c.bits != 8 && c.bits != 4)
    throw Error("weight '" + name + "': " + std::to_string(c.bits) + "-bit weights are not supported (8 or 4)");
  if (cols <= 0 || cols % 32 != 0) {
    throw Error("weight '" + name + "': " + std::to_string(cols) + " input features is not a multiple of 32");
  }
  if (c.group_size != 0 && (c.group_size < 32 || c.group_size % 32 != 0)) {
    throw Error("weight '" + name + "': group size " + std::to_string(c.group_size) +
                " is not a positive multiple of 32");
  }
  WeightScheme s;
  s.storage = c.bits == 8 ? DType::kI8 : DType::kInt4;
  s.group_size = int(c.group_size == 0 || c.group_size > cols ? cols : c.group_size);
  s.scale_dtype = DType::kF32;
  s.has_zero_points = c.bits == 4 && !c.symmetric;
  s.activation = c.activation;
  if (s.activation == ActivationPolicy::kDynamicInt8Token && c.bits != 8) {
    throw Error("weight '" + name + "': int8 activations need 8-bit weights");
  }
  return s;
}

namespace {

// Rows [r0, r1) of quantize_rtn: each row depends on its own values only.
void quantize_rows(IntMatrix& m, const float* w, int64_t r0, int64_t r1, const IntQuantConfig& c,
                   const float* column_scale) {
  const int64_t cols = m.cols, g = m.scheme.group_size, n_groups = m.n_groups();
  const int64_t row_bytes = c.bits == 8 ? cols : cols / 2;
  const bool fits = c.bits == 4 && !c.symmetric;
  std::vector<float> scaled(static_cast<size_t>(cols)), importance(static_cast<size_t>(g));
  for (int64_t r = r0; r < r1; ++r) {
    const float clip = c.row_clips.empty() ? c.clip : c.row_clips[size_t(r)];
    const RangeFit fit = fits ? (c.row_fits.empty() ? c.range_fit : c.row_fits[size_t(r)]) : RangeFit::kMinMax;
    const float* src = w + r * cols;
    if (column_scale) {
      for (int64_t i = 0; i < cols; ++i) scaled[size_t(i)] = src[i] * column_scale[i];
      src = scaled.data();
    }
    uint8_t* out = m.data.data() + r * row_bytes;
    for (int64_t gi = 0; gi < n_groups; ++gi) {
      const int64_t begin = gi * g, n = std::min(g, cols - begin);
      GroupCode code;
      if (fit == RangeFit::kMinMax) {
        code = group_code(src + begin, n, c, clip);
      } else {
        fit_importance(fit, src + begin, begin, n, c, importance.data());
        code = fitted_group_code(src + begin, importance.data(), n, c, clip, fit == RangeFit::kMagnitude ? kRefits : 1);
      }
      m.scales[size_t(r * n_groups + gi)] = code.scale;
      if (m.scheme.has_zero_points) m.zeros[size_t(r * n_groups + gi)] = int8_t(code.zero);
      for (int64_t i = begin; i < begin + n; ++i) {
        const int q = quantize_value(src[i], code, c.bits);
        if (c.bits == 8)
          out[i] = uint8_t(int8_t(q));
        else
          set_int4(out, i, q);
      }
    }
  }
}

// Worker threads for a matrix: one per core, none for a matrix small enough
// that starting them costs more than it saves.
int64_t quantize_threads(int threads, int64_t rows, int64_t cols) {
  constexpr int64_t kValuesPerThread = 1 << 18;
  const int64_t wanted = threads > 0 ? threads : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  return std::clamp<int64_t>(rows * cols / kValuesPerThread, 1, std::min(wanted, rows));
}

}  // namespace

IntMatrix quantize_rtn(const std::string& name, const float* w, int64_t rows, int64_t cols, const IntQuantConfig& c,
                       const float* column_scale, int threads) {
  IntMatrix m;
  m.scheme = int_scheme(name, c, cols);
  m.rows = rows;
  m.cols = cols;
  const int64_t row_bytes = c.bits == 8 ? cols : cols / 2;
  m.data.assign(size_t(rows * row_bytes), 0);
  m.scales.resize(size_t(rows * m.n_groups()));
  if (m.scheme.has_zero_points) m.zeros.resize(size_t(rows * m.n_groups()));
  check_row_settings(name, c, rows, cols);
  const int64_t n_threads = quantize_threads(threads, rows, cols);
  if (n_threads == 1) {
    quantize_rows(m, w, 0, rows, c, column_scale);
    return m;
  }
  // Contiguous row ranges (4-bit rows are whole bytes, so no two threads
  // write one byte); the result is the same whatever the thread count.
  const int64_t per = (rows + n_threads - 1) / n_threads;
  std::vector<std::exception_ptr> failures(static_cast<size_t>(n_threads));
  const auto run = [&](int64_t part) {
    try {
      quantize_rows(m, w, part * per, std::min(rows, (part + 1) * per), c, column_scale);
    } catch (...) {
      failures[size_t(part)] = std::current_exception();  // out of memory for a scratch row
    }
  };
  {
    std::vector<std::jthread> workers;
    for (int64_t part = 1; part * per < rows; ++part) workers.emplace_back(run, part);
    run(0);
  }
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  return m;
}

QuantizedLinear IntMatrix::view(std::string name) const {
  QuantizedLinear l;
  l.name = std::move(name);
  l.scheme = scheme;
  l.rows = rows;
  l.cols = cols;
  l.data = data.data();
  l.row_stride = uint64_t(scheme.storage == DType::kI8 ? cols : cols / 2);
  l.scales = scales.data();
  l.zero_points = scheme.has_zero_points ? zeros.data() : nullptr;
  return l;
}

void validate_int_linear(const QuantizedLinear& w) {
  const WeightScheme& s = w.scheme;
  if (!is_int_scheme(s)) throw Error("weight '" + w.name + "': scheme " + s.describe() + " is not an integer scheme");
  int_scheme(w.name, {s.storage == DType::kI8 ? 8 : 4, s.group_size, !s.has_zero_points, s.activation}, w.cols);
  if (s.group_size > w.cols) throw Error("weight '" + w.name + "': group size exceeds the row");
  if (!w.data || !w.scales || (s.has_zero_points && !w.zero_points)) {
    throw Error("weight '" + w.name + "': quantized data, scales or zero points missing");
  }
  if (s.scale_dtype != DType::kF32) throw Error("weight '" + w.name + "': scales must be f32 once loaded");
}

void dequantize_int_row(const QuantizedLinear& w, int64_t row, float* out) {
  const int64_t g = w.scheme.group_size, n_groups = group_count(w.cols, g);
  const auto* data = static_cast<const uint8_t*>(w.data) + uint64_t(row) * w.row_stride;
  const float* scales = static_cast<const float*>(w.scales) + row * n_groups;
  const auto* zeros = static_cast<const int8_t*>(w.zero_points);
  for (int64_t i = 0; i < w.cols; ++i) {
    const int64_t gi = i / g;
    if (w.scheme.storage == DType::kI8) {
      out[i] = scales[gi] * float(int8_t(data[i]));
    } else {
      const int zero = zeros ? zeros[row * n_groups + gi] : 0;
      out[i] = scales[gi] * float(int4_at(data, i) - zero);
    }
  }
}

}  // namespace tessera::quant
