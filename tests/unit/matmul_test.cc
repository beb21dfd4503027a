// Quantised dot products and the matmul driver against an f64 reference
// built from the reference dequantisation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "quant/dequantize.h"
#include "kernels/cpu/linear/matmul.h"
#include "kernels/cpu/linear/onednn_matmul.h"
#include "kernels/cpu/linear/quantize_rows.h"
#include "tests/unit/one_row_bits.h"
#include "tests/unit/test_files.h"

namespace tessera::cpu {
namespace {

DType dtype_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto d = dtype_from_gguf(id); d && dtype_name(*d) == name) return *d;
  }
  throw std::runtime_error(name);
}

// Weight rows: the random blocks of the dequantisation goldens (F32/F16 are
// plain random values), viewed as `rows` rows of `cols` elements.
struct WeightRows {
  DType dtype;
  std::vector<uint8_t> bytes;
  int64_t rows, cols;
};

WeightRows weight_rows(const std::string& type) {
  WeightRows w{dtype_named(type), test::read_bytes(test::data_path("dequant/" + type + ".bin")), 0, 0};
  const DTypeInfo& info = dtype_info(w.dtype);
  const int64_t elems = int64_t(w.bytes.size() / info.block_bytes * info.block_elems);
  w.cols = info.block_elems == 256 ? 512 : 256;
  w.rows = elems / w.cols;
  return w;
}

class VecDot : public ::testing::TestWithParam<std::string> {};

TEST_P(VecDot, MatchesDequantizedReference) {
  const WeightRows w = weight_rows(GetParam());
  const VecDotKernel scalar = scalar_vec_dot(w.dtype);
  ASSERT_NE(scalar.fn, nullptr);
  const VecDotKernel best = select_vec_dot(w.dtype, detect_isa());
  const size_t row_bytes = *dtype_bytes(w.dtype, uint64_t(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    const std::vector<float> x = test::normal_values(w.cols, uint32_t(r + 1));
    std::vector<uint8_t> act(*dtype_bytes(scalar.activation_type, uint64_t(w.cols)));
    convert_activation_row(scalar.activation_type, x.data(), act.data(), w.cols);
    // Reference: dequantised weights times dequantised activations, in f64.
    std::vector<float> wf(static_cast<size_t>(w.cols)), xf(static_cast<size_t>(w.cols));
    dequantize_row(w.dtype, w.bytes.data() + r * row_bytes, wf.data(), w.cols);
    if (scalar.activation_type == DType::kQ8_K) {
      const auto* blocks = reinterpret_cast<const BlockQ8_K*>(act.data());
      for (int64_t i = 0; i < w.cols; ++i) xf[size_t(i)] = blocks[i / kQK_K].d * blocks[i / kQK_K].qs[i % kQK_K];
    } else if (scalar.activation_type == DType::kQ8_1) {
      const auto* blocks = reinterpret_cast<const BlockQ8_1*>(act.data());
      for (int64_t i = 0; i < w.cols; ++i) xf[size_t(i)] = f16_to_f32(blocks[i / kQK].d) * blocks[i / kQK].qs[i % kQK];
    } else {
      dequantize_row(scalar.activation_type, act.data(), xf.data(), w.cols);
    }
    double want = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < w.cols; ++i) {
      want += double(wf[size_t(i)]) * double(xf[size_t(i)]);
      magnitude += std::fabs(double(wf[size_t(i)]) * double(xf[size_t(i)]));
    }
    const float got_scalar = scalar.fn(w.cols, w.bytes.data() + r * row_bytes, act.data());
    const float got_best = best.fn(w.cols, w.bytes.data() + r * row_bytes, act.data());
    // Q4_1's minimum term uses the f16-rounded activation sum, as llama.cpp does.
    const double tolerance = 1e-5 * magnitude + (w.dtype == DType::kQ4_1 ? 2e-3 * magnitude : 0.0) + 1e-30;
    EXPECT_NEAR(got_scalar, want, tolerance) << GetParam() << " row " << r;
    EXPECT_NEAR(got_best, got_scalar, 1e-5 * magnitude + 1e-30) << GetParam() << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, VecDot, ::testing::Values("F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"));

// MXFP4 (gpt-oss experts) against Q8_0 activations: the integer block sums,
// each scaled by half its E8M0 scale, as llama.cpp sums them. Scales are
// kept to a trained model's range (the golden file's random ones overflow).
TEST(VecDotMxfp4, MatchesDequantizedReference) {
  const int64_t cols = 256;
  std::vector<BlockMXFP4> w(static_cast<size_t>(cols / kQK));
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (BlockMXFP4& b : w) {
    b.e = uint8_t(118 + next() % 12);
    for (uint8_t& q : b.qs) q = uint8_t(next() >> 24);
  }
  const VecDotKernel k = select_vec_dot(DType::kMXFP4, detect_isa());
  ASSERT_NE(k.fn, nullptr);
  ASSERT_EQ(k.activation_type, DType::kQ8_0);
  const std::vector<float> x = test::normal_values(cols, 5);
  std::vector<uint8_t> act(*dtype_bytes(DType::kQ8_0, uint64_t(cols)));
  convert_activation_row(DType::kQ8_0, x.data(), act.data(), cols);
  std::vector<float> wf(static_cast<size_t>(cols)), xf(static_cast<size_t>(cols));
  dequantize_row(DType::kMXFP4, w.data(), wf.data(), cols);
  dequantize_row(DType::kQ8_0, act.data(), xf.data(), cols);
  double want = 0.0, magnitude = 0.0;
  for (int64_t i = 0; i < cols; ++i) {
    want += double(wf[size_t(i)]) * double(xf[size_t(i)]);
    magnitude += std::fabs(double(wf[size_t(i)]) * double(xf[size_t(i)]));
  }
  EXPECT_GT(magnitude, 0.0);
  EXPECT_NEAR(k.fn(cols, w.data(), act.data()), want, 1e-5 * magnitude);
  // Every instruction set's kernel gives the scalar one's bits.
  EXPECT_EQ(k.fn(cols, w.data(), act.data()), scalar_vec_dot(DType::kMXFP4).fn(cols, w.data(), act.data()));
  // One value by hand: the second nibble table entry (1) times half of 2^0.
  EXPECT_EQ(e8m0_half(127), 0.5f);
  EXPECT_EQ(float(kMxfp4Values[7]) * e8m0_half(127), 6.0f);  // E2M1's largest magnitude
  // Built from bits, every exponent's half scale is the exact power of two
  // (subnormals for 0 and 1).
  for (int e = 0; e < 256; ++e) EXPECT_EQ(e8m0_half(uint8_t(e)), std::ldexp(1.0f, e - 128)) << e;
}

// The MXFP4 kernels (one row eight blocks at a time, four and eight tokens
// at once, through matmul for 1 to 21 tokens) give the scalar kernel's bits,
// on each instruction set this CPU has; 9 blocks a row leave one over after
// a group of eight.
TEST(VecDotMxfp4, EveryKernelGivesTheScalarBits) {
  const int64_t rows = 6, cols = 9 * kQK;
  std::vector<BlockMXFP4> w(static_cast<size_t>(rows * cols / kQK));
  uint32_t state = 777;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (BlockMXFP4& b : w) {
    b.e = uint8_t(110 + next() % 24);
    for (uint8_t& q : b.qs) q = uint8_t(next() >> 24);
  }
  IsaFeatures avx2_only = detect_isa();
  avx2_only.avx512f = avx2_only.avx512bw = avx2_only.avx512vl = avx2_only.avx512_vnni = false;
  const VecDotKernel scalar = scalar_vec_dot(DType::kMXFP4);
  for (const IsaFeatures& isa : {detect_isa(), avx2_only}) {
    const LinearWeight weight("test.mxfp4", DType::kMXFP4, w.data(), rows, cols, isa, false);
    for (const int64_t tokens : {1, 3, 4, 8, 9, 21}) test_support::expect_one_row_bits(weight, tokens, 21, "MXFP4");
    const std::vector<float> x = test::normal_values(cols, 8);
    std::vector<uint8_t> act(weight.activation_row_bytes());
    convert_activation_row(DType::kQ8_0, x.data(), act.data(), cols);
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(weight.kernel().fn(cols, weight.row(r), act.data()), scalar.fn(cols, weight.row(r), act.data())) << r;
  }
}

TEST(QuantizeRows, Q8_0RoundsHalfToEvenAndKeepsScale) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // scale 1.0
  x[1] = 2.5f;    // tie: rounds to 2
  x[2] = -3.5f;   // tie: rounds to -4
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 1.0f);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], -4);
}

TEST(QuantizeRows, Q8_KMapsTheExtremeToMinus127AndSumsGroups) {
  std::vector<float> x = test::normal_values(256, 9);
  x[17] = 10.0f;
  BlockQ8_K b;
  quantize_row_q8_k(x.data(), &b, 256);
  EXPECT_EQ(b.qs[17], -127);
  EXPECT_FLOAT_EQ(b.d * b.qs[17], 10.0f);
  int sum = 0;
  for (int j = 16; j < 32; ++j) sum += b.qs[j];
  EXPECT_EQ(b.bsums[1], sum);
}

// llama.cpp keys the scale to the first element of largest magnitude: with
// +a and −a both present, whichever comes first maps to −127.
TEST(QuantizeRows, Q8_KTakesTheFirstOfTiedExtremes) {
  for (const bool negative_first : {true, false}) {
    std::vector<float> x = test::normal_values(256, 11);
    x[5] = negative_first ? -10.0f : 10.0f;
    x[200] = -x[5];
    BlockQ8_K b;
    quantize_row_q8_k(x.data(), &b, 256);
    EXPECT_EQ(b.qs[5], -127) << negative_first;
    EXPECT_EQ(b.qs[200], 127) << negative_first;
    EXPECT_EQ(b.d, x[5] / -127.0f) << negative_first;
  }
}

// Up to kMaxRowTokens tokens take the decode-rows kernels where the format
// has them (1, 3 and 8 here); 21 take the eight-token kernels twice (on
// AVX-512, the four-row ones and then single rows for the rows of a tile
// left over), then the four- and one-token kernels. Every output must be the
// one-row kernel's, on each instruction set this CPU has. The weights keep no row-group copy
// here, so that these kernels serve the prompt too
// (tests/unit/row_groups_test.cc covers the copy).
TEST(Matmul, OneAndManyTokensMatchPerRowDots) {
  IsaFeatures avx2_only = detect_isa();
  avx2_only.avx512f = avx2_only.avx512bw = avx2_only.avx512vl = avx2_only.avx512_vnni = false;
  for (const IsaFeatures& isa : {detect_isa(), avx2_only}) {
    for (const char* type : {"Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}) {
      const WeightRows w = weight_rows(type);
      // One row short of the golden's, so that rows are left over after the four-row kernels.
      const int64_t rows = w.rows - 1;
      const LinearWeight weight("test.weight", w.dtype, w.bytes.data(), rows, w.cols, isa, false);
      for (const int64_t tokens : {1, 3, 8, 21}) test_support::expect_one_row_bits(weight, tokens, 3, type);
    }
  }
}

// `rows` rows of `cols` elements of random bytes, each block's f16 scales
// (the halves at `scale_offsets` in the block) set to small normal values.
std::vector<uint8_t> random_blocks(DType dtype, int64_t rows, int64_t cols, const std::vector<size_t>& scale_offsets,
                                   std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(dtype);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> scale(0.0f, 0.02f);
  std::vector<uint8_t> bytes(size_t(rows * cols / info.block_elems) * info.block_bytes);
  for (uint8_t& b : bytes) b = uint8_t(byte(rng));
  for (size_t block = 0; block < bytes.size(); block += info.block_bytes) {
    for (const size_t at : scale_offsets) {
      const uint16_t half = f32_to_f16(scale(rng));
      std::memcpy(&bytes[block + at], &half, sizeof half);
    }
  }
  return bytes;
}

// Every output of `tokens` tokens (8 and 21) against random weights of each
// type gives the one-row bits, on each instruction set this CPU has.
void expect_wide_rows_give_one_row_bits(const std::vector<std::pair<const char*, std::vector<size_t>>>& types, int64_t rows,
                                        int64_t cols, unsigned seed) {
  IsaFeatures avx2_only = detect_isa();
  avx2_only.avx512f = avx2_only.avx512bw = avx2_only.avx512vl = avx2_only.avx512_vnni = false;
  std::mt19937 rng(seed);
  for (const IsaFeatures& isa : {detect_isa(), avx2_only}) {
    for (const auto& [type, scale_offsets] : types) {
      const DType dtype = dtype_named(type);
      const std::vector<uint8_t> bytes = random_blocks(dtype, rows, cols, scale_offsets, rng);
      const LinearWeight weight("test.weight", dtype, bytes.data(), rows, cols, isa, false);
      for (const int64_t tokens : {8, 21}) test_support::expect_one_row_bits(weight, tokens, 9, type);
    }
  }
}

// Rows of 75 blocks: the eight-token kernels take their block scales in
// runs of 32 blocks, so these rows end in a part run after two whole ones.
// The scales are d, and Q4_1's m after it.
TEST(Matmul, EightTokenKernelsGiveTheOneRowBitsOnWideRows) {
  expect_wide_rows_give_one_row_bits({{"Q4_0", {0}}, {"Q4_1", {0, 2}}, {"Q5_0", {0}}, {"Q8_0", {0}}}, 12, 75 * 32, 5);
}

// Rows of 13 super-blocks (every six-bit scale and min, every high bit at
// random; Q4_K's d and dmin lead its block, Q6_K's d ends it): the
// eight-token kernels (pair blocks on both instruction sets) carry their
// integer sums across the super-blocks' chunks.
TEST(Matmul, EightTokenKQuantKernelsGiveTheOneRowBitsOnWideRows) {
  const size_t q6_k_d = dtype_info(DType::kQ6_K).block_bytes - 2;
  expect_wide_rows_give_one_row_bits({{"Q4_K", {0, 2}}, {"Q6_K", {q6_k_d}}}, 7, 13 * 256, 11);
}

TEST(Matmul, FourRowKernelsGiveTheOneRowBits) {
  for (const char* type : {"Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}) {
    const WeightRows w = weight_rows(type);
    const VecDotKernel k = select_vec_dot(w.dtype, detect_isa());
    if (!k.fn4) continue;  // this CPU has no four-row kernel for it
    const size_t row_bytes = *dtype_bytes(w.dtype, uint64_t(w.cols));
    std::vector<std::vector<uint8_t>> acts(4, std::vector<uint8_t>(*dtype_bytes(k.activation_type, uint64_t(w.cols))));
    const void* four[4];
    for (int j = 0; j < 4; ++j) {
      const std::vector<float> x = test::normal_values(w.cols, uint32_t(40 + j));
      convert_activation_row(k.activation_type, x.data(), acts[size_t(j)].data(), w.cols);
      four[j] = acts[size_t(j)].data();
    }
    for (int64_t r = 0; r < w.rows; ++r) {
      float out[4];
      k.fn4(w.cols, w.bytes.data() + r * row_bytes, four, out);
      for (int j = 0; j < 4; ++j) EXPECT_EQ(out[j], k.fn(w.cols, w.bytes.data() + r * row_bytes, four[j])) << type << " row " << r;
    }
  }
}

TEST(Matmul, DecodeRowKernelsGiveTheOneRowBits) {
  for (const char* type : {"Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}) {
    const WeightRows w = weight_rows(type);
    const IsaFeatures isa = detect_isa();
    const VecDotKernel k = select_vec_dot(w.dtype, isa);
    // Every x86 build has them for the 32-element formats; the K formats' are optional.
    const bool block32 = std::string(type).find('K') == std::string::npos;
    if (isa.avx2 && isa.fma && isa.f16c && block32) {
      ASSERT_TRUE(k.fn_rows) << type;
    }
    if (!k.fn_rows) continue;
    const size_t row_bytes = *dtype_bytes(w.dtype, uint64_t(w.cols));
    const int64_t quarter = w.rows / kDecodeRows;
    std::vector<std::vector<uint8_t>> acts;
    const void* tokens[kMaxRowTokens];
    for (int t = 0; t < kMaxRowTokens; ++t) {
      const std::vector<float> x = test::normal_values(w.cols, uint32_t(77 + t));
      acts.emplace_back(*dtype_bytes(k.activation_type, uint64_t(w.cols)));
      convert_activation_row(k.activation_type, x.data(), acts.back().data(), w.cols);
    }
    for (int t = 0; t < kMaxRowTokens; ++t) tokens[t] = acts[size_t(t)].data();
    for (int n_tokens = 1; n_tokens <= kMaxRowTokens; ++n_tokens) {
      for (int64_t r = 0; r < quarter; ++r) {
        float out[kMaxRowTokens * kDecodeRows];
        k.fn_rows(w.cols, w.bytes.data() + r * row_bytes, size_t(quarter) * row_bytes, tokens, n_tokens, out);
        for (int t = 0; t < n_tokens; ++t) {
          for (int q = 0; q < kDecodeRows; ++q) {
            EXPECT_EQ(out[t * kDecodeRows + q], k.fn(w.cols, w.bytes.data() + (q * quarter + r) * row_bytes, tokens[t]))
                << type << " row " << r << " token " << t << " of " << n_tokens;
          }
        }
      }
    }
  }
}

// The AVX-512 kernels must give the AVX2 kernels' bits, so that outputs do
// not depend on which of the two a CPU runs.
TEST(Matmul, Avx512KernelsGiveTheAvx2Bits) {
  const IsaFeatures isa = detect_isa();
  if (!(isa.avx2 && isa.fma && isa.f16c && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni)) {
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  }
  for (const char* type : {"Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}) {
    const WeightRows w = weight_rows(type);
    const VecDotKernel wide = avx512_vec_dot(w.dtype), narrow = avx2_vec_dot(w.dtype);
    ASSERT_TRUE(wide.fn && narrow.fn) << type;
    const size_t row_bytes = *dtype_bytes(w.dtype, uint64_t(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const std::vector<float> x = test::normal_values(w.cols, seed * 100 + uint32_t(r));
        std::vector<uint8_t> act(*dtype_bytes(wide.activation_type, uint64_t(w.cols)));
        convert_activation_row(wide.activation_type, x.data(), act.data(), w.cols);
        const void* row = w.bytes.data() + r * row_bytes;
        EXPECT_EQ(wide.fn(w.cols, row, act.data()), narrow.fn(w.cols, row, act.data())) << type << " row " << r;
      }
    }
  }
}

TEST(Matmul, SharedInputOfDifferentWidthsIsAnError) {
  const WeightRows w = weight_rows("Q8_0");
  const LinearWeight wide("wide.weight", w.dtype, w.bytes.data(), w.rows, w.cols, detect_isa());
  const LinearWeight narrow("narrow.weight", w.dtype, w.bytes.data(), w.rows / 2, w.cols / 2, detect_isa());
  const std::vector<float> x = test::normal_values(w.cols, 9);
  std::vector<float> y(size_t(w.rows));
  ThreadPool pool(1);
  MatmulScratch scratch;
  try {
    const MatmulOutput outputs[] = {{&wide, y.data()}, {&narrow, y.data()}};
    matmul_shared_input(outputs, x.data(), 1, scratch, pool);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("narrow.weight"), std::string::npos);
  }
}

TEST(Matmul, UnsupportedFormatIsRefusedAtLoad) {
  std::vector<uint8_t> bytes(66);
  try {
    LinearWeight("blk.0.attn_q.weight", DType::kIQ2_XXS, bytes.data(), 1, 256, detect_isa());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::cpu

namespace tessera::cpu {
namespace {

// f32 weights go to oneDNN, but for small matrices (an MoE router), whose
// call overhead would dwarf the arithmetic: those take the dot products,
// whatever the token count.
TEST(OnednnMatmul, MatchesAnF64Reference) {
  for (const auto [cols, through_onednn] : {std::pair<int64_t, bool>{2048, true}, {64, false}}) {
    for (int64_t tokens : {1, 7}) {
      const int64_t rows = 33;
      const std::vector<float> w = test::normal_values(rows * cols, 21);
      const std::vector<float> x = test::normal_values(tokens * cols, 22);
      std::vector<float> y(static_cast<size_t>(tokens * rows));
      const LinearWeight weight("dense", DType::kF32, w.data(), rows, cols, detect_isa());
      ASSERT_EQ(weight.dense() != nullptr, through_onednn) << cols;
      ThreadPool pool(2);
      MatmulScratch scratch;
      matmul(weight, x.data(), tokens, y.data(), scratch, pool);
      for (int64_t m = 0; m < tokens; ++m) {
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < cols; ++k) {
            const double p = double(x[size_t(m * cols + k)]) * double(w[size_t(r * cols + k)]);
            want += p;
            magnitude += std::fabs(p);
          }
          EXPECT_NEAR(y[size_t(m * rows + r)], want, 1e-6 * magnitude + 1e-5) << cols << ": " << m << "," << r;
        }
      }
    }
  }
}

// y = x · Wᵀ with both operands rounded to bf16 and the products summed in
// f64: what every bf16 path must give, to within its f32 sums.
void expect_bf16_products(const std::vector<uint16_t>& w, const std::vector<float>& x, const std::vector<float>& y,
                          int64_t rows, int64_t cols, const std::string& path) {
  const int64_t tokens = int64_t(x.size()) / cols;
  for (int64_t m = 0; m < tokens; ++m) {
    for (int64_t r = 0; r < rows; ++r) {
      double want = 0.0;
      for (int64_t k = 0; k < cols; ++k) {
        want += double(bf16_to_f32(f32_to_bf16(x[size_t(m * cols + k)]))) * double(bf16_to_f32(w[size_t(r * cols + k)]));
      }
      ASSERT_NEAR(y[size_t(m * rows + r)], want, 1e-3) << path << ": token " << m << ", row " << r;
    }
  }
}

std::vector<uint16_t> bf16_values(int64_t n, uint32_t seed) {
  const std::vector<float> f = test::normal_values(n, seed);
  std::vector<uint16_t> out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = f32_to_bf16(f[i]);
  return out;
}

// bf16 weights on every x86 CPU: a few tokens through the bf16 dot products
// (or oneDNN's bf16 matmul where the CPU has one), a prompt through oneDNN,
// on tiles widened to f32 where it has no bf16 matmul. 300 rows: two tiles.
TEST(OnednnMatmul, Bf16WeightsOnEveryCpu) {
  const int64_t rows = 300, cols = 96;
  const std::vector<uint16_t> w = bf16_values(rows * cols, 31);
  for (const char* level : {"amx", "avx2", "scalar"}) {
    const LinearWeight weight("bf16", DType::kBF16, w.data(), rows, cols, cap_isa(detect_isa(), level));
    ASSERT_NE(weight.dense(), nullptr);
    for (const int64_t tokens : {1, 3, 40}) {
      const std::vector<float> x = test::normal_values(tokens * cols, 32 + uint32_t(tokens));
      std::vector<float> y(static_cast<size_t>(tokens * rows));
      ThreadPool pool(2);
      MatmulScratch scratch;
      matmul(weight, x.data(), tokens, y.data(), scratch, pool);
      expect_bf16_products(w, x, y, rows, cols, std::string(level) + ", " + std::to_string(tokens) + " tokens");
    }
  }
}

// The widened tiles, forced on any CPU: the same products.
TEST(OnednnMatmul, Bf16TilesWidenedToF32GiveTheBf16Products) {
  const int64_t rows = 513, cols = 64, tokens = 17;
  const std::vector<uint16_t> w = bf16_values(rows * cols, 41);
  const OnednnMatmul widened(w.data(), true, rows, cols, /*bf16_products=*/false);
  EXPECT_EQ(widened.min_tokens(), 16);
  const std::vector<float> x = test::normal_values(tokens * cols, 42);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  widened.run(x.data(), tokens, y.data());
  expect_bf16_products(w, x, y, rows, cols, "widened tiles");
}

}  // namespace
}  // namespace tessera::cpu
