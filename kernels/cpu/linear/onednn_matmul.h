#pragma once
// y = x · Wᵀ for f32 or bf16 weight matrices through oneDNN's matmul, used
// for the plain floating-point checkpoints (Hugging Face safetensors). The
// weights stay where they are; oneDNN reads them as the transposed operand.
// With bf16 weights the activations are rounded to bf16 and the products
// accumulate in f32, as bf16 matrix hardware does. Where oneDNN has no bf16
// matmul (a CPU without AVX-512 BF16 or AMX), the weights are widened to an
// f32 copy once and the bf16-rounded activations meet them in f32: the same
// products (a bf16 product is exact in f32), at twice the weights' memory.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace tessera::cpu {

class OnednnMatmul {
 public:
  // `weights` is [rows][cols] of f32 (bf16 = false) or bf16, row-major, and
  // must outlive this object.
  OnednnMatmul(const void* weights, bool bf16, int64_t rows, int64_t cols);
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  // y[m][r] = sum_k x[m][k] * W[r][k] for m < n_tokens.
  void run(const float* x, int64_t n_tokens, float* y) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::cpu
