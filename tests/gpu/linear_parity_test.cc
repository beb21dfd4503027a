// Linear layers in every GGUF and float format the real models use, on real
// layer shapes, at decode and prefill token counts: against the CPU backend
// (block formats to the bit), and against the exact product of the CPU's
// dequantized weights.
#include <memory>
#include <tuple>

#include "engine/core/error.h"
#include "quant/dequantize.h"
#include "tests/gpu/parity.h"

namespace tessera::test {
namespace {

struct Shape {
  const char* layer;
  int64_t rows, cols;
};

// (rows, cols) of layers of SmolLM2-135M, Gemma-3-270M and Qwen2.5-0.5B,
// and a row count no kernel's work-group divides (a tensor-parallel shard
// of a vocabulary can have any).
const Shape kShapes[] = {{"smollm2.k", 192, 576}, {"smollm2.down", 576, 1536}, {"gemma.gate", 2048, 640},
                         {"gemma.down", 640, 2048}, {"qwen.k", 128, 896},      {"qwen.up", 4864, 896},
                         {"qwen.down", 896, 4864},  {"ragged", 37, 512}};

const DType kFormats[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                          DType::kQ5_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K};

class LinearParity : public Parity {};

TEST_P(LinearParity, EveryFormatOnRealShapes) {
  int checked = 0;
  for (const Shape& shape : kShapes) {
    for (DType dtype : kFormats) {
      if (shape.cols % dtype_info(dtype).block_elems != 0) continue;
      const auto blocks = random_blocks(rng_, dtype, shape.rows * shape.cols);
      std::vector<float> dense(size_t(shape.rows * shape.cols));
      dequantize_row(dtype, blocks.data(), dense.data(), shape.rows * shape.cols);
      const auto bias = normal_values(rng_, size_t(shape.rows));
      QuantizedLinear w = linear_from_tensor(shape.layer, dtype, blocks.data(), shape.rows, shape.cols);
      w.bias = bias.data();
      auto cpu_weight = cpu_->prepare_linear(w);
      auto gpu_weight = gpu_->prepare_linear(w);
      for (int64_t tokens : {1, 3, 16}) {
        const auto x = normal_values(rng_, size_t(tokens * shape.cols));
        std::vector<float> exact(size_t(tokens * shape.rows));
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t r = 0; r < shape.rows; ++r) {
            double sum = bias[size_t(r)];
            for (int64_t c = 0; c < shape.cols; ++c) sum += double(dense[size_t(r * shape.cols + c)]) * x[size_t(t * shape.cols + c)];
            exact[size_t(t * shape.rows + r)] = float(sum);
          }
        }
        std::vector<float> outs[2];
        for (int b = 0; b < 2; ++b) {
          Backend& be = b == 0 ? *cpu_ : *gpu_;
          float* y = zeros<float>(be, exact.size());
          const LinearOutput out{b == 0 ? cpu_weight.get() : gpu_weight.get(), y};
          be.kernels().linear({upload(be, x), tokens, &out, 1}, be.default_stream());
          outs[b] = download(be, y, exact.size());
        }
        const std::string what = std::string(shape.layer) + " " + std::string(dtype_name(dtype)) + " x" + std::to_string(tokens);
        // Block formats follow the CPU's arithmetic to the bit; float
        // weights meet the activations themselves (rounded to f16 or bf16
        // for f16 or bf16 weights), summed in another order.
        const bool blocks_format = dtype_info(dtype).quantized;
        if (blocks_format) {
          EXPECT_EQ(0u, bit_differences(outs[1], outs[0])) << what;
        }
        EXPECT_LT(max_relative_error(outs[1], outs[0]), 1e-5) << what;
        EXPECT_LT(max_relative_error(outs[1], exact), blocks_format || dtype == DType::kF16 || dtype == DType::kBF16 ? 3e-2 : 1e-5) << what;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// One call with several outputs reading the same input, as a layer's q, k
// and v or gate and up: runs of one format (one launch each on the GPU at
// decode, rows of several weights in one work-group), formats changing
// between runs, a run longer than one launch takes, ragged row counts, and
// biases on some outputs only. Each output has the CPU's bits.
TEST_P(LinearParity, SeveralOutputsOfOneCall) {
  struct Output {
    DType dtype;
    int64_t rows;
    bool bias;
  };
  const int64_t cols = 512;
  // Eight: the most one call may have.
  const std::vector<Output> outputs = {{DType::kQ5_0, 37, true}, {DType::kQ5_0, 128, true}, {DType::kQ6_K, 66, false},
                                       {DType::kQ4_K, 5, false}, {DType::kQ4_K, 64, true},  {DType::kQ4_K, 3, false},
                                       {DType::kQ4_K, 70, false}, {DType::kQ4_K, 9, true}};
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<std::vector<float>> biases;
  std::vector<std::unique_ptr<PreparedLinear>> weights[2];
  for (const Output& o : outputs) {
    blocks.push_back(random_blocks(rng_, o.dtype, o.rows * cols));
    biases.push_back(normal_values(rng_, size_t(o.rows)));
    QuantizedLinear w = linear_from_tensor("several", o.dtype, blocks.back().data(), o.rows, cols);
    if (o.bias) w.bias = biases.back().data();
    weights[0].push_back(cpu_->prepare_linear(w));
    weights[1].push_back(gpu_->prepare_linear(w));
  }
  for (int64_t tokens : {1, 4, 16}) {
    const auto x = normal_values(rng_, size_t(tokens * cols));
    std::vector<std::vector<float>> outs[2];
    for (int b = 0; b < 2; ++b) {
      Backend& be = b == 0 ? *cpu_ : *gpu_;
      std::vector<LinearOutput> call;
      for (size_t i = 0; i < outputs.size(); ++i) {
        call.push_back({weights[b][i].get(), zeros<float>(be, size_t(tokens * outputs[i].rows))});
      }
      be.kernels().linear({upload(be, x), tokens, call.data(), int(call.size())}, be.default_stream());
      for (size_t i = 0; i < outputs.size(); ++i) outs[b].push_back(download(be, call[i].y, size_t(tokens * outputs[i].rows)));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(0u, bit_differences(outs[1][i], outs[0][i])) << "output " << i << " x" << tokens;
    }
  }
}

TEST_P(LinearParity, SeparateScalesAreRefusedAtLoad) {
  QuantizedLinear w;
  w.name = "blk.0.ffn_up.weight";
  w.scheme.storage = DType::kI8;
  w.rows = 64;
  w.cols = 64;
  try {
    gpu_->prepare_linear(w);
    FAIL() << "an int8 weight with separate scales was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
  }
}

TESSERA_PARITY_SUITE(LinearParity);

}  // namespace
}  // namespace tessera::test
