#pragma once
// y = x · Wᵀ for f32 or bf16 weight matrices through oneDNN's matmul, used
// for the plain floating-point checkpoints (Hugging Face safetensors). The
// weights stay where they are; oneDNN reads them as the transposed operand.
// With bf16 weights the activations are rounded to bf16 and the products
// accumulate in f32, as bf16 matrix hardware does. Where oneDNN has no bf16
// matmul (a CPU without AVX-512 BF16 or AMX), each call widens the weights a
// tile of rows at a time into f32 scratch and multiplies the bf16-rounded
// activations by the tile in f32: the same products (a bf16 product is exact
// in f32), with no f32 copy of the whole matrix. That pays for prompts; the
// matmul driver sends a few tokens to the bf16 dot-product kernels instead
// (min_tokens()).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace tessera::cpu {

class OnednnMatmul {
 public:
  // Whether oneDNN has a bf16 matmul on this CPU (asked once per process,
  // at the first load of a bf16 weight).
  static bool has_bf16_matmul();

  // `weights` is [rows][cols] of f32 (bf16 = false) or bf16, row-major, and
  // must outlive this object. bf16 weights use a bf16 matmul where
  // `bf16_products` allows it (the CPU features the caller goes by) and
  // oneDNN has one; else they are widened a tile at a time.
  OnednnMatmul(const void* weights, bool bf16, int64_t rows, int64_t cols, bool bf16_products = true);
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  // y[m][r] = sum_k x[m][k] * W[r][k] for m < n_tokens.
  void run(const float* x, int64_t n_tokens, float* y) const;
  // The fewest tokens worth a call: 1, or more where each call widens tiles.
  int64_t min_tokens() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::cpu
