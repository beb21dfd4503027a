// Row-wise and element-wise ops and the embedding lookup, each against the
// CPU backend from the same inputs.
#include <cstdio>
#include <cstring>

#include "kernels/rope_angles.h"
#include "tests/gpu/parity.h"

namespace tessera::test {
namespace {

using OpsParity = Parity;

TEST_P(OpsParity, RmsNormBitIdenticalWithAndWithoutWeightOffset) {
  // The sum of squares is taken in the CPU's order, in double: the outputs
  // are its bits. A real model's width, and one that the kernel's shared
  // stages of squares (2048) cover in three, the last part-filled.
  const std::pair<int64_t, int64_t> shapes[] = {{256, 896}, {9, 5000}};  // (rows, dim)
  for (const auto& [rows, dim] : shapes) {
    for (float offset : {0.0f, 1.0f}) {
      const auto x = normal_values(rng_, size_t(rows * dim), 3.0f), w = normal_values(rng_, size_t(dim));
      std::vector<float> outs[2];
      for (int b = 0; b < 2; ++b) {
        Backend& be = b == 0 ? *cpu_ : *gpu_;
        float* out = zeros<float>(be, x.size());
        be.kernels().rms_norm({upload(be, x), upload(be, w), offset, 1e-6f, rows, dim, out}, be.default_stream());
        outs[b] = download(be, out, x.size());
      }
      EXPECT_EQ(0u, bit_differences(outs[1], outs[0])) << "dim " << dim << ", offset " << offset;
    }
  }
}

TEST_P(OpsParity, RopeEveryStyleAndNumerics) {
  const int64_t tokens = 5;
  const int heads = 3, dim = 64;
  const std::vector<int32_t> positions{0, 1, 17, 300, 4095};
  std::vector<float> inv_freq(dim / 2), factors(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    inv_freq[size_t(i)] = std::pow(10000.0f, -2.0f * float(i) / float(dim));
    factors[size_t(i)] = 1.0f + float(i % 5);
  }
  for (auto style : {ops::RopeStyle::kHalves, ops::RopeStyle::kInterleaved}) {
    for (auto numerics : {ops::RopeNumerics::kGgml, ops::RopeNumerics::kFrequencyTable}) {
      for (bool with_factors : {false, true}) {
        for (bool with_angle_table : {false, true}) {
          const auto x = normal_values(rng_, size_t(tokens * heads * dim));
          std::vector<float> outs[2];
          for (int b = 0; b < 2; ++b) {
            Backend& be = b == 0 ? *cpu_ : *gpu_;
            ops::RopeParams p{style, numerics, dim, 1000000.0f, 0.5f, nullptr, nullptr};
            if (with_angle_table && b == 1) {
              ops::RopeParams host = p;
              host.freq_factors = with_factors ? factors.data() : nullptr;
              host.inv_freq = inv_freq.data();
              p.cos_table = upload(be, ops::rope_table(host, 4096));
              p.table_positions = 4096;
            }
            if (with_factors) p.freq_factors = upload(be, factors);
            p.inv_freq = upload(be, inv_freq);
            float* data = upload(be, x);
            be.kernels().rope({data, upload(be, positions), tokens, heads, dim, p}, be.default_stream());
            outs[b] = download(be, data, x.size());
          }
          const std::string what = std::to_string(int(style)) + " " + std::to_string(int(numerics)) + " " +
                                   std::to_string(with_factors) + " " + std::to_string(with_angle_table);
          // The CPU's sine and cosine round apart from correctly rounded
          // ones in a few percent of cases: with the host's table of its
          // angles the results are its bits, without it within an ulp.
          if (with_angle_table) {
            EXPECT_EQ(0u, bit_differences(outs[1], outs[0])) << what;
          }
          EXPECT_LT(max_relative_error(outs[1], outs[0]), 1e-6) << what;
        }
      }
    }
  }
}

TEST_P(OpsParity, GatedActivations) {
  for (auto act : {ops::GatedActivation::kSilu, ops::GatedActivation::kGeluTanh, ops::GatedActivation::kGeluTanhTable,
                   ops::GatedActivation::kSiluClampedOai}) {
    const auto gate = normal_values(rng_, 4096, 4.0f), up = normal_values(rng_, 4096);
    std::vector<float> outs[2];
    for (int b = 0; b < 2; ++b) {
      Backend& be = b == 0 ? *cpu_ : *gpu_;
      float* out = zeros<float>(be, gate.size());
      be.kernels().gated_activation({act, upload(be, gate), upload(be, up), int64_t(gate.size()), out}, be.default_stream());
      outs[b] = download(be, out, gate.size());
    }
    // SiLU uses the CPU's exponential: the same bits. GELU's tanh may differ
    // in its last bit, which the table's f16 rounding nearly always hides.
    if (act == ops::GatedActivation::kSilu) {
      EXPECT_EQ(0u, bit_differences(outs[1], outs[0]));
    }
    const double tolerance = act == ops::GatedActivation::kGeluTanhTable ? 1e-3 : 1e-6;
    EXPECT_LT(max_relative_error(outs[1], outs[0]), tolerance) << int(act);
    std::printf("%s: %zu of %zu elements differ in bits\n", act == ops::GatedActivation::kSilu ? "silu" : "gelu",
                bit_differences(outs[1], outs[0]), gate.size());
  }
}

TEST_P(OpsParity, AddScaleSoftcapAndGatherRows) {
  const int64_t n = 3000, width = 100;
  const auto x = normal_values(rng_, n, 20.0f), y = normal_values(rng_, n);
  const std::vector<int32_t> rows{29, 0, 7};
  std::vector<float> outs[2], gathered[2];
  for (int b = 0; b < 2; ++b) {
    Backend& be = b == 0 ? *cpu_ : *gpu_;
    Stream& s = be.default_stream();
    float* data = upload(be, x);
    be.kernels().add({data, upload(be, y), n}, s);
    be.kernels().scale({data, n, 0.75f}, s);
    be.kernels().softcap({data, n, 30.0f}, s);
    float* picked = zeros<float>(be, rows.size() * size_t(width));
    be.kernels().gather_rows({data, width, upload(be, rows), int64_t(rows.size()), picked}, s);
    outs[b] = download(be, data, size_t(n));
    gathered[b] = download(be, picked, rows.size() * size_t(width));
  }
  // tanh differs between the libraries by an ulp or two.
  EXPECT_LT(max_relative_error(outs[1], outs[0]), 1e-6);
  EXPECT_LT(max_relative_error(gathered[1], gathered[0]), 1e-6);
  EXPECT_EQ(gathered[1][0], outs[1][29 * width]);
}

// A mixture-of-experts layer adds each expert's weighted output into its
// tokens' rows: rounded as the CPU's x + s * y, unfused.
TEST_P(OpsParity, ScatterAddRowsBitIdentical) {
  const int64_t n_tokens = 40, width = 96;
  const auto x = normal_values(rng_, n_tokens * width), y = normal_values(rng_, 5 * width);
  const std::vector<int32_t> rows{31, 2, 17, 0, 39};
  const std::vector<float> scales{0.61f, 0.39f, 1.0f, 0.125f, 0.7071f};
  std::vector<float> outs[2];
  for (int b = 0; b < 2; ++b) {
    Backend& be = b == 0 ? *cpu_ : *gpu_;
    ASSERT_TRUE(be.supports(Op::kScatterAddRows, DType::kF32));
    float* data = upload(be, x);
    be.kernels().scatter_add_rows({data, width, upload(be, rows), upload(be, scales), int64_t(rows.size()), upload(be, y)},
                                  be.default_stream());
    outs[b] = download(be, data, x.size());
  }
  EXPECT_EQ(bit_differences(outs[1], outs[0]), 0u);
  EXPECT_EQ(outs[0][31 * width], x[31 * width] + 0.61f * y[0]);
  EXPECT_EQ(outs[0][1 * width], x[1 * width]);  // rows not listed stay as they were
}

class Embedding : public Parity {};

TEST_P(Embedding, EveryTableFormatBitIdentical) {
  const int64_t vocab = 40, dim = 512;
  const std::vector<int32_t> ids{3, 0, 39, 3, 17};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ8_0,
                      DType::kQ4_K, DType::kQ6_K}) {
    ASSERT_TRUE(gpu_->supports(Op::kEmbedding, dtype)) << dtype_name(dtype);
    const auto table = random_blocks(rng_, dtype, vocab * dim);
    std::vector<float> outs[2];
    for (int b = 0; b < 2; ++b) {
      Backend& be = b == 0 ? *cpu_ : *gpu_;
      float* out = zeros<float>(be, ids.size() * size_t(dim));
      be.kernels().embedding({dtype, upload(be, table), 0, vocab, dim, upload(be, ids), int64_t(ids.size()), out},
                             be.default_stream());
      outs[b] = download(be, out, ids.size() * size_t(dim));
    }
    EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float))) << dtype_name(dtype);
  }
}

// A vocabulary-parallel shard holds rows 10…29 of 40: its ids read their
// rows of the whole table, the others read zeros.
TEST_P(Embedding, VocabularyShardZerosOtherIds) {
  const int64_t vocab = 40, dim = 256, first = 10, rows = 20;
  const std::vector<int32_t> ids{3, 10, 29, 30, 17, 39};
  for (DType dtype : {DType::kF16, DType::kQ4_1, DType::kQ6_K}) {
    const auto table = random_blocks(rng_, dtype, vocab * dim);
    const size_t row_bytes = table.size() / size_t(vocab);
    const std::vector<uint8_t> share(table.begin() + first * int64_t(row_bytes), table.begin() + (first + rows) * int64_t(row_bytes));
    Backend& cpu = *cpu_;
    float* whole_out = zeros<float>(cpu, ids.size() * size_t(dim));
    cpu.kernels().embedding({dtype, upload(cpu, table), 0, vocab, dim, upload(cpu, ids), int64_t(ids.size()), whole_out},
                            cpu.default_stream());
    const std::vector<float> whole = download(cpu, whole_out, ids.size() * size_t(dim));
    for (Backend* be : {cpu_.get(), gpu_.get()}) {
      float* out = upload(*be, std::vector<float>(ids.size() * size_t(dim), 7.0f));
      be->kernels().embedding({dtype, upload(*be, share), first, rows, dim, upload(*be, ids), int64_t(ids.size()), out},
                              be->default_stream());
      const std::vector<float> got = download(*be, out, ids.size() * size_t(dim));
      for (size_t t = 0; t < ids.size(); ++t) {
        const bool held = ids[t] >= first && ids[t] < first + rows;
        for (int64_t j = 0; j < dim; ++j) {
          const float want = held ? whole[t * size_t(dim) + size_t(j)] : 0.0f;
          ASSERT_EQ(want, got[t * size_t(dim) + size_t(j)]) << dtype_name(dtype) << " id " << ids[t] << " element " << j;
        }
      }
    }
  }
}

TESSERA_PARITY_SUITE(OpsParity);
TESSERA_PARITY_SUITE(Embedding);

}  // namespace

}  // namespace tessera::test
