// Integer schemes: round-to-nearest quantization against its definition, and
// every instruction set's kernels against a double-precision product of the
// dequantized weights, with batch invariance, DA8W8's exact integer sums and
// the row groups' bits alike on every instruction set.
#include "kernels/cpu/linear/int_linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "quant/activation_aware.h"
#include "quant/int_weights.h"

namespace tessera::cpu {
namespace {

struct Case {
  const char* name;
  quant::IntQuantConfig config;
  int64_t cols;
};

const Case kCases[] = {
    {"a16w8_channel_576", {8, 0, true, ActivationPolicy::kNone}, 576},
    {"a16w8_channel_8448", {8, 0, true, ActivationPolicy::kNone}, 8448},  // spans of 4096
    {"a16w8_g128_160", {8, 128, true, ActivationPolicy::kNone}, 160},
    {"a16w4_g128_asym_576", {4, 128, false, ActivationPolicy::kNone}, 576},  // last group of 64
    {"a16w4_g64_sym_896", {4, 64, true, ActivationPolicy::kNone}, 896},
    {"a16w4_g32_asym_96", {4, 32, false, ActivationPolicy::kNone}, 96},  // padded to 128
    {"a16w4_g32_asym_576", {4, 32, false, ActivationPolicy::kNone}, 576},
    {"a16w4_g32_sym_160", {4, 32, true, ActivationPolicy::kNone}, 160},  // five spans in three chunks
    {"a16w4_g128_asym_4864", {4, 128, false, ActivationPolicy::kNone}, 4864},
    {"da8w8_576", {8, 0, true, ActivationPolicy::kDynamicInt8Token}, 576},
    {"da8w8_96", {8, 0, true, ActivationPolicy::kDynamicInt8Token}, 96},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<float> random_values(size_t n, uint32_t seed, float outlier_every = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = dist(rng);
    if (outlier_every > 0 && i % size_t(outlier_every) == 7) v[i] *= 40.0f;  // activation outliers
  }
  return v;
}

struct KernelChoice {
  const char* name;
  IsaFeatures isa;
  IntLayout layout;
};

// Every kernel family this host runs: rows on each instruction set, and the
// row-group layout on AVX2, on AVX-512 VNNI alone and with AMX tiles where
// granted.
std::vector<KernelChoice> kernel_choices(bool groups_fit) {
  std::vector<KernelChoice> sets = {{"scalar", IsaFeatures{}, IntLayout::kRows}};
  const IsaFeatures host = detect_isa();
  IsaFeatures no_amx = host;
  no_amx.amx_tile = no_amx.amx_int8 = no_amx.amx_bf16 = false;
  if (host.avx2 && host.fma) {
    IsaFeatures avx2 = no_amx;
    avx2.avx512f = avx2.avx512bw = avx2.avx512vl = avx2.avx512_vnni = false;
    sets.push_back({"avx2", avx2, IntLayout::kRows});
    if (groups_fit) sets.push_back({"avx2 row groups", avx2, IntLayout::kRowGroups});
  }
  if (host.avx2 && host.fma && host.avx512f && host.avx512bw && host.avx512vl && host.avx512_vnni) {
    sets.push_back({"avx512", no_amx, IntLayout::kRows});
    if (groups_fit) sets.push_back({"avx512 row groups", no_amx, IntLayout::kRowGroups});
    if (groups_fit && host.amx_int8) sets.push_back({"amx row groups", host, IntLayout::kRowGroups});
  }
  return sets;
}

TEST(IntQuant, RoundToNearestStaysWithinHalfAStep) {
  for (const Case& c : kCases) {
    const int64_t rows = 5;
    const auto w = random_values(size_t(rows * c.cols), 1);
    quant::IntQuantConfig config = c.config;
    config.range_fit = quant::RangeFit::kMinMax;
    const quant::IntMatrix m = quant::quantize_rtn(c.name, w.data(), rows, c.cols, config);
    const QuantizedLinear view = m.view(c.name);
    std::vector<float> back(static_cast<size_t>(c.cols));
    for (int64_t r = 0; r < rows; ++r) {
      quant::dequantize_int_row(view, r, back.data());
      for (int64_t i = 0; i < c.cols; ++i) {
        const float step = m.scales[size_t(r * m.n_groups() + i / m.scheme.group_size)];
        ASSERT_LE(std::fabs(back[size_t(i)] - w[size_t(r * c.cols + i)]), 0.5f * step * 1.0001f + 1e-6f)
            << c.name << " row " << r << " col " << i;
      }
    }
  }
}

// Σ importance · (w - ŵ)² of group `gi` of row `r`.
double group_error(const quant::IntMatrix& m, const std::vector<float>& w, int64_t r, int64_t gi,
                   const std::vector<float>& importance) {
  std::vector<float> back(static_cast<size_t>(m.cols));
  quant::dequantize_int_row(m.view("w"), r, back.data());
  double e = 0;
  const int64_t g = m.scheme.group_size;
  for (int64_t i = gi * g; i < std::min(m.cols, (gi + 1) * g); ++i) {
    const double d = double(back[size_t(i)]) - w[size_t(r * m.cols + i)];
    e += importance[size_t(i)] * d * d;
  }
  return e;
}

// The fits round every value to its nearest level of the group's grid (the
// grid may end inside the range: values beyond take its end) and never do
// worse by their own weighting than the range itself; the activation fit
// follows the importance it is given.
TEST(IntQuant, RangeFitsRoundToNearestAndLowerTheirWeightedError) {
  const int64_t rows = 16, cols = 256;
  const auto w = random_values(size_t(rows * cols), 8,
                               29);  // outliers: fits and ranges differ
  std::vector<float> importance(static_cast<size_t>(cols));
  for (int64_t i = 0; i < cols; ++i) importance[size_t(i)] = i % 5 == 0 ? 50.0f : 1.0f;
  quant::IntQuantConfig c{4, 64, false, ActivationPolicy::kNone};
  c.range_fit = quant::RangeFit::kMinMax;
  const quant::IntMatrix minmax = quant::quantize_rtn("w", w.data(), rows, cols, c);
  c.column_importance = importance;
  bool fits_differ = false;
  for (const quant::RangeFit fit : {quant::RangeFit::kMagnitude, quant::RangeFit::kActivation}) {
    c.range_fit = fit;
    const quant::IntMatrix m = quant::quantize_rtn("w", w.data(), rows, cols, c);
    std::vector<float> back(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      quant::dequantize_int_row(m.view("w"), r, back.data());
      for (int64_t gi = 0; gi < m.n_groups(); ++gi) {
        const size_t at = size_t(r * m.n_groups() + gi);
        const float step = m.scales[at], zero = float(m.zeros[at]);
        std::vector<float> weights(static_cast<size_t>(cols));
        for (int64_t i = 0; i < cols; ++i) {
          weights[size_t(i)] = fit == quant::RangeFit::kActivation ? importance[size_t(i)]
                                                                   : w[size_t(r * cols + i)] * w[size_t(r * cols + i)];
        }
        EXPECT_LE(group_error(m, w, r, gi, weights), group_error(minmax, w, r, gi, weights) * 1.0001 + 1e-9);
        fits_differ = fits_differ || step != minmax.scales[at];
        for (int64_t i = gi * 64; i < (gi + 1) * 64; ++i) {
          const float v = std::clamp(w[size_t(r * cols + i)], step * (-8.0f - zero), step * (7.0f - zero));
          ASSERT_LE(std::fabs(back[size_t(i)] - v), 0.5f * step * 1.0001f + 1e-6f) << "row " << r << " col " << i;
        }
      }
    }
  }
  EXPECT_TRUE(fits_differ);
  c.range_fit = quant::RangeFit::kActivation;
  c.column_importance.pop_back();
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), rows, cols, c), Error);
  c.column_importance = importance;
  c.row_fits.assign(size_t(rows - 1), quant::RangeFit::kMagnitude);
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), rows, cols, c), Error);
}

// The magnitude fit settles its grid: with its own codes held, the scale
// that minimizes the group's w²-weighted error is the one chosen (to float
// rounding), so rounding again to that scale cannot help.
TEST(IntQuant, MagnitudeFitIsLeastSquaresForItsOwnCodes) {
  const int64_t rows = 32, cols = 256;
  const auto w = random_values(size_t(rows * cols), 5, 41);
  quant::IntQuantConfig c{4, 128, false, ActivationPolicy::kNone};
  c.range_fit = quant::RangeFit::kMagnitude;
  const quant::IntMatrix m = quant::quantize_rtn("w", w.data(), rows, cols, c);
  std::vector<float> back(static_cast<size_t>(cols));
  int settled = 0, groups = 0;
  for (int64_t r = 0; r < rows; ++r) {
    quant::dequantize_int_row(m.view("w"), r, back.data());
    for (int64_t gi = 0; gi < m.n_groups(); ++gi, ++groups) {
      const float step = m.scales[size_t(r * m.n_groups() + gi)];
      double num = 0, den = 0;
      for (int64_t i = gi * 128; i < (gi + 1) * 128; ++i) {
        const double x = w[size_t(r * cols + i)], u = double(back[size_t(i)]) / step, imp = x * x;
        num += imp * x * u;
        den += imp * u * u;
      }
      settled += std::fabs(num / den - step) <= 1e-5 * step;
    }
  }
  EXPECT_EQ(settled, groups) << "groups at their least-squares scale";
}

// The product fit weighs each weight by w² times its input's mean square:
// where calibration found one input loud, it leaves less of that error than
// the w² fit, which cannot see the inputs.
TEST(IntQuant, ProductFitWeighsEachTermByItsInput) {
  const int64_t rows = 64, cols = 128, loud = 7;
  const auto w = random_values(size_t(rows * cols), 43);
  quant::IntQuantConfig c{4, 128, false, ActivationPolicy::kNone};
  c.column_importance.assign(size_t(cols), 1.0f);
  c.column_importance[size_t(loud)] = 1e3f;
  const auto product_error = [&](quant::RangeFit fit) {
    c.range_fit = fit;
    const quant::IntMatrix m = quant::quantize_rtn("w", w.data(), rows, cols, c);
    std::vector<float> back(static_cast<size_t>(cols));
    double error = 0;
    for (int64_t r = 0; r < rows; ++r) {
      quant::dequantize_int_row(m.view("w"), r, back.data());
      for (int64_t i = 0; i < cols; ++i) {
        const double x = w[size_t(r * cols + i)], d = double(back[size_t(i)]) - x;
        error += x * x * c.column_importance[size_t(i)] * d * d;
      }
    }
    return error;
  };
  const double magnitude = product_error(quant::RangeFit::kMagnitude), product = product_error(quant::RangeFit::kProduct);
  EXPECT_LT(product, 0.5 * magnitude);
}

// Rows split over threads give the bits one thread gives, for every scheme
// (a matrix large enough that quantize_rtn splits it).
TEST(IntQuant, ThreadsGiveTheOneThreadBits) {
  const int64_t rows = 1031, cols = 1024;  // rows not a multiple of the thread count
  const auto w = random_values(size_t(rows * cols), 41, 8);
  for (const quant::IntQuantConfig c : {quant::IntQuantConfig{4, 32, false, ActivationPolicy::kNone},
                                        quant::IntQuantConfig{4, 128, true, ActivationPolicy::kNone},
                                        quant::IntQuantConfig{8, 0, true, ActivationPolicy::kNone}}) {
    const quant::IntMatrix one = quant::quantize_rtn("w", w.data(), rows, cols, c, nullptr, 1);
    for (const int threads : {2, 3}) {
      const quant::IntMatrix many = quant::quantize_rtn("w", w.data(), rows, cols, c, nullptr, threads);
      EXPECT_EQ(many.data, one.data) << c.bits << "-bit, " << threads << " threads";
      EXPECT_EQ(many.scales, one.scales) << c.bits << "-bit, " << threads << " threads";
      EXPECT_EQ(many.zeros, one.zeros) << c.bits << "-bit, " << threads << " threads";
    }
  }
}

// A whole row of nibbles decodes as element-by-element reads do, with and
// without the offset to unsigned nibbles, odd lengths included.
TEST(IntQuant, Int4RowDecodesAsEachElementReads) {
  for (const int64_t cols : {1, 2, 7, 64, 97}) {
    std::vector<uint8_t> row(size_t((cols + 1) / 2));
    for (int64_t c = 0; c < cols; ++c) quant::set_int4(row.data(), c, int((c * 5 + 3) % 16) - 8);  // every value in [-8, 7]
    for (const int offset : {0, 8}) {
      std::vector<int8_t> out(static_cast<size_t>(cols));
      quant::int4_row(row.data(), cols, offset, out.data());
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out[size_t(c)], quant::int4_at(row.data(), c) + offset) << cols << " " << c;
    }
  }
}

TEST(IntQuant, RejectsShapesTheKernelsCannotHold) {
  const std::vector<float> w(64 * 2, 1.0f);
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), 2, 40, {8, 0, true, {}}),
               Error);  // cols not 32k
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), 2, 64, {4, 48, false, {}}),
               Error);  // group not 32k
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), 2, 64, {3, 32, false, {}}),
               Error);  // bits
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), 2, 64, {4, 32, false, ActivationPolicy::kDynamicInt8Token}), Error);
}

// A clip per output channel shrinks that channel's range alone.
TEST(IntQuant, EachRowKeepsItsOwnClip) {
  const int64_t rows = 3, cols = 64;
  const auto w = random_values(size_t(rows * cols), 4);
  quant::IntQuantConfig c{8, 0, true, ActivationPolicy::kNone};
  c.row_clips = {1.0f, 0.5f, 0.8f};
  const quant::IntMatrix m = quant::quantize_rtn("w", w.data(), rows, cols, c);
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (int64_t i = 0; i < cols; ++i) amax = std::max(amax, std::fabs(w[size_t(r * cols + i)]));
    EXPECT_FLOAT_EQ(m.scales[size_t(r)], amax * c.row_clips[size_t(r)] / 127.0f) << "row " << r;
  }
  c.row_clips.pop_back();
  EXPECT_THROW(quant::quantize_rtn("w", w.data(), rows, cols, c), Error);
}

// The search's 4-bit clips are per output channel, within AWQ's grid, and
// what it settles on is no worse than plain rounding on the calibration rows.
TEST(ActivationAware, ClipsPerChannelAndNoWorseThanRounding) {
  const int64_t rows = 24, cols = 128, tokens = 64;
  const auto w = random_values(size_t(rows * cols), 5,
                               37);  // weight outliers: clipping pays somewhere
  const auto x = random_values(size_t(tokens * cols), 6, 61);
  quant::ChannelStats stats(cols, 1, tokens);
  stats.add(x.data(), tokens);
  const quant::MatmulFn matmul = [](const float* wt, int64_t r, int64_t c, const float* in, int64_t n, float* y) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t o = 0; o < r; ++o) {
        double acc = 0;
        for (int64_t i = 0; i < c; ++i) acc += double(in[t * c + i]) * wt[o * c + i];
        y[t * r + o] = float(acc);
      }
    }
  };
  const std::pair<const float*, int64_t> weights[] = {{w.data(), rows}};
  const quant::ScaleSearch found =
      quant::search_input_scales(weights, stats, {4, 32, false, ActivationPolicy::kNone}, matmul);
  ASSERT_EQ(found.clips.size(), 1u);
  ASSERT_EQ(found.clips[0].size(), size_t(rows));
  ASSERT_EQ(found.fits[0].size(), size_t(rows));
  ASSERT_EQ(found.importance.size(), size_t(cols));
  bool some_clipped = false, some_fitted = false;
  for (int64_t r = 0; r < rows; ++r) {
    const float clip = found.clips[0][size_t(r)];
    EXPECT_GE(clip, 0.5f);
    EXPECT_LE(clip, 1.0f);
    some_clipped = some_clipped || clip < 1.0f;
    if (found.fits[0][size_t(r)] != quant::RangeFit::kMinMax) {
      some_fitted = true;
      EXPECT_EQ(clip, 1.0f);  // a fit spans the whole range
    }
  }
  EXPECT_TRUE(some_clipped || some_fitted);
  EXPECT_LE(found.error, found.plain_error);
  // 8-bit weights take one fraction for the whole matrix.
  const quant::ScaleSearch eight =
      quant::search_input_scales(weights, stats, {8, 0, true, ActivationPolicy::kNone}, matmul);
  ASSERT_EQ(eight.clips[0].size(), size_t(rows));
  for (float clip : eight.clips[0]) EXPECT_EQ(clip, eight.clips[0][0]);
  EXPECT_LE(eight.error, eight.plain_error);
}

// Activations round the same way on every instruction set, ties to even
// included: rows whose largest magnitude is 32767 (int16) or 127 (int8)
// scale by exactly 1, so each value must come out as its nearest even integer.
TEST(IntQuant, ActivationsRoundAlikeOnEveryInstructionSet) {
  const int64_t cols = 64, tokens = 3;
  std::vector<float> x = random_values(size_t(tokens * cols), 7, 13);
  for (int64_t c = 0; c < cols; ++c) x[size_t(cols + c)] = float(c % 9) - 4.5f + float(c % 2);
  x[size_t(cols)] = 32767.0f;
  for (int64_t c = 0; c < cols; ++c) x[size_t(2 * cols + c)] = float(c % 7) - 3.5f;
  x[size_t(2 * cols)] = 127.0f;
  const auto w = random_values(size_t(4 * cols), 8);
  const quant::IntMatrix m16 = quant::quantize_rtn("w16", w.data(), 4, cols, {8, 0, true, ActivationPolicy::kNone});
  const quant::IntMatrix m8 =
      quant::quantize_rtn("w8", w.data(), 4, cols, {8, 0, true, ActivationPolicy::kDynamicInt8Token});
  std::vector<int16_t> first16;
  std::vector<int> first8;
  for (const KernelChoice& choice : kernel_choices(true)) {
    SCOPED_TRACE(choice.name);
    const IntLinear a(m16.view("w16"), choice.isa, choice.layout), b(m8.view("w8"), choice.isa, choice.layout);
    const IntLinear* ws[] = {&a, &b};
    IntActivations r;
    quantize_int_activations(ws, x.data(), tokens, r);
    const bool offset = b.kernels().offset_int8_activations;
    std::vector<int16_t> got16;
    std::vector<int> got8;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = size_t(t * r.padded_cols + c);
        got16.push_back(r.x16[i]);
        got8.push_back(offset ? int(uint8_t(r.x8[i])) - 128 : int(r.x8[i]));
      }
    }
    for (int64_t c = 1; c < cols; ++c) {
      ASSERT_EQ(got16[size_t(cols + c)], int(std::nearbyint(x[size_t(cols + c)]))) << "column " << c;
      ASSERT_EQ(got8[size_t(2 * cols + c)], int(std::nearbyint(x[size_t(2 * cols + c)]))) << "column " << c;
    }
    if (first16.empty()) {
      first16 = got16;
      first8 = got8;
    }
    EXPECT_EQ(got16, first16);
    EXPECT_EQ(got8, first8);
  }
}

// Only kernels that honour IntRowTask::row_step may be given rows spread
// over the weight; the AVX-512 ones read rows w_stride apart as given.
TEST(IntQuant, OnlyKernelsThatTakeSpreadRowsSayTheyDo) {
  EXPECT_FALSE(scalar_int_kernels().spread_rows);
  const IsaFeatures isa = detect_isa();
  if (isa.avx2 && isa.fma) {
    EXPECT_TRUE(avx2_int_kernels().spread_rows);
    EXPECT_FALSE(avx2_int_kernels().reads_span_sums);  // zero points come off the widened nibbles
    EXPECT_NE(avx2_int_kernels().quantize_row, nullptr);
    EXPECT_TRUE(avx2_group_kernels().int16_activations);  // no split into bytes on AVX2
  }
  if (isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni) {
    const auto avx512 = avx512_int_kernels();
    EXPECT_FALSE(avx512.spread_rows);
    EXPECT_TRUE(avx512.offset_int8_activations);
    EXPECT_NE(avx512.quantize_row, nullptr);
    EXPECT_TRUE(avx512.reads_span_sums);
    EXPECT_FALSE(avx512_group_kernels().int16_activations);
  }
}

// The product of `lin` with all `n_tokens` rows of x at once, into y.
std::vector<float> product_of_all(const IntLinear& lin, const std::vector<float>& x, int64_t n_tokens, ThreadPool& pool) {
  const IntLinear* ws[] = {&lin};
  IntActivations acts;
  quantize_int_activations(ws, x.data(), n_tokens, acts);
  std::vector<float> y(static_cast<size_t>(n_tokens * lin.rows()));
  int_matmul(lin, acts, n_tokens, y.data(), pool);
  return y;
}

// Token t of x alone through `lin` gives y's bits for it.
void expect_alone_the_same(const IntLinear& lin, const std::vector<float>& x, int64_t t, const std::vector<float>& y,
                           ThreadPool& pool) {
  const int64_t rows = lin.rows(), cols = lin.cols();
  const IntLinear* ws[] = {&lin};
  IntActivations alone;
  quantize_int_activations(ws, x.data() + t * cols, 1, alone);
  std::vector<float> y1(static_cast<size_t>(rows));
  int_matmul(lin, alone, 1, y1.data(), pool);
  for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y1[size_t(r)], y[size_t(t * rows + r)]) << "token " << t << " row " << r;
}

class IntLinearKernels : public ::testing::TestWithParam<Case> {};

TEST_P(IntLinearKernels, MatchTheDequantizedProductOnEveryInstructionSet) {
  const Case c = GetParam();
  // Two full tiles of 16 tokens and a partial one; rows end inside a group,
  // and each of two threads takes more than one block of eight groups.
  const int64_t rows = 301, n_tokens = 37;
  const auto w = random_values(size_t(rows * c.cols), 2);
  const auto x = random_values(size_t(n_tokens * c.cols), 3, 61);
  const quant::IntMatrix m = quant::quantize_rtn(c.name, w.data(), rows, c.cols, c.config);
  const QuantizedLinear view = m.view(c.name);
  const bool int8_acts = c.config.activation == ActivationPolicy::kDynamicInt8Token;

  std::vector<double> expected(size_t(n_tokens * rows)), magnitude(expected.size());
  std::vector<float> wr(static_cast<size_t>(c.cols));
  for (int64_t r = 0; r < rows; ++r) {
    quant::dequantize_int_row(view, r, wr.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < c.cols; ++i) {
        sum += double(wr[size_t(i)]) * x[size_t(t * c.cols + i)];
        mag += std::fabs(double(wr[size_t(i)]));
      }
      expected[size_t(t * rows + r)] = sum;
      magnitude[size_t(t * rows + r)] = mag;
    }
  }
  std::vector<float> da8_reference, groups_reference;
  ThreadPool pool(2);
  const int64_t group = c.config.group_size == 0 ? c.cols : c.config.group_size;
  // Row groups take groups of whole 64-column chunks, and 4-bit groups of 32.
  const bool groups_fit = group == c.cols || group % 64 == 0 || (c.config.bits == 4 && group == 32);
  for (const KernelChoice& choice : kernel_choices(groups_fit)) {
    SCOPED_TRACE(std::string(c.name) + " on " + choice.name);
    const IntLinear lin(view, choice.isa, choice.layout);
    ASSERT_EQ(lin.row_groups(), choice.layout == IntLayout::kRowGroups);
    const std::vector<float> y = product_of_all(lin, x, n_tokens, pool);
    for (int64_t t = 0; t < n_tokens; ++t) {
      float amax = 0;
      for (int64_t i = 0; i < c.cols; ++i) amax = std::max(amax, std::fabs(x[size_t(t * c.cols + i)]));
      // Rounding each activation moves it by at most half a step.
      const double step = amax / (int8_acts ? 127.0 : 32767.0);
      for (int64_t r = 0; r < rows; ++r) {
        const size_t i = size_t(t * rows + r);
        const double bound = 0.5 * step * magnitude[i] * 1.01 + 1e-4 * std::fabs(expected[i]) + 1e-3;
        ASSERT_NEAR(y[i], expected[i], bound) << "token " << t << " row " << r;
      }
      // The same token alone gives the same bits.
      ASSERT_NO_FATAL_FAILURE(expect_alone_the_same(lin, x, t, y, pool));
    }
    if (int8_acts) {
      if (da8_reference.empty())
        da8_reference = y;
      else
        ASSERT_EQ(y, da8_reference) << "integer sums differ between instruction sets";
    }
    // Row groups sum each span exactly on every instruction set, so AVX2,
    // AVX-512 and AMX agree bit for bit on every scheme.
    if (lin.row_groups()) {
      if (groups_reference.empty())
        groups_reference = y;
      else
        ASSERT_EQ(y, groups_reference) << "row groups differ between instruction sets";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, IntLinearKernels, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// A long prompt goes through the row groups in runs of tokens (each group
// widened again for every run): every token of a prompt longer than two
// runs, the last one partial, gets the bits it gets alone, on every
// row-group kernel this host runs.
TEST(IntLinearKernels, LongPromptsGiveEachTokenItsOwnBits) {
  const int64_t rows = 40, cols = 896, n_tokens = 261;
  const quant::IntQuantConfig config{4, 128, false, ActivationPolicy::kNone};
  const auto w = random_values(size_t(rows * cols), 12);
  const auto x = random_values(size_t(n_tokens * cols), 13, 61);
  const quant::IntMatrix m = quant::quantize_rtn("long", w.data(), rows, cols, config);
  const QuantizedLinear view = m.view("long");
  ThreadPool pool(2);
  for (const KernelChoice& choice : kernel_choices(true)) {
    if (choice.layout != IntLayout::kRowGroups) continue;
    SCOPED_TRACE(choice.name);
    const IntLinear lin(view, choice.isa, choice.layout);
    const std::vector<float> y = product_of_all(lin, x, n_tokens, pool);
    for (int64_t t = 0; t < n_tokens; ++t) ASSERT_NO_FATAL_FAILURE(expect_alone_the_same(lin, x, t, y, pool));
  }
}

// Packed into a huge-page arena (as the CPU backend loads them), weights
// give the bits they give packed on their own, in both layouts.
TEST(IntLinearKernels, WeightsPackedInAnArenaGiveTheSameBits) {
  const int64_t rows = 50, cols = 576, n_tokens = 5;
  const quant::IntQuantConfig config{4, 128, false, ActivationPolicy::kNone};
  const auto w = random_values(size_t(rows * cols), 21);
  const auto x = random_values(size_t(n_tokens * cols), 22);
  const quant::IntMatrix m = quant::quantize_rtn("arena", w.data(), rows, cols, config);
  ThreadPool pool(2);
  HugePageArena arena;
  for (const KernelChoice& choice : kernel_choices(true)) {
    SCOPED_TRACE(choice.name);
    const IntLinear alone(m.view("arena"), choice.isa, choice.layout);
    const IntLinear placed(m.view("arena"), choice.isa, choice.layout, &arena);
    EXPECT_EQ(product_of_all(placed, x, n_tokens, pool), product_of_all(alone, x, n_tokens, pool));
  }
}

}  // namespace
}  // namespace tessera::cpu
