#pragma once
// Activations quantized to 8 bits per 32-element chunk, as the CPU backend
// quantizes them before multiplying GGUF block weights (kernels/cpu/
// quantize_rows.cc): Q8_0 for Q4_0/Q5_0/Q8_0 weights, Q8_1 for Q4_1 and
// Q8_K for the k-quants. The values and scales have the CPU's bits; the
// layout is the GPU's own, one array per field.
#include <cstdint>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

struct Q8Rows {
  int8_t* qs;  // (n_tokens, cols)
  float* d;    // (n_tokens, cols / 32): the chunk's scale (Q8_0/Q8_1: the f16 scale widened; Q8_K: its super-block's)
  float* s;    // (n_tokens, cols / 32): Q8_1: the f16 d * sum(qs); Q8_K: sum(qs) of the chunk; Q8_0: unused
};

// Bytes of a Q8Rows for n_tokens rows of cols and its layout inside `base`.
size_t q8_rows_bytes(int64_t n_tokens, int64_t cols);
Q8Rows q8_rows_at(void* base, int64_t n_tokens, int64_t cols);

// The activation format the CPU multiplies `weight_type` against (kQ8_0,
// kQ8_1 or kQ8_K), or kF32 when activations stay in floating point.
DType q8_activation_type(DType weight_type);

void launch_quantize_q8(DType activation_type, const float* x, int64_t n_tokens, int64_t cols, const Q8Rows& out,
                        cudaStream_t stream);

// Device memory for quantized activations, grown when a larger batch
// arrives. Outgrown buffers are kept until the scratch goes: kernels still
// queued, and recordings made earlier, keep reading theirs.
class Q8Scratch {
 public:
  Q8Scratch() = default;
  Q8Scratch(const Q8Scratch&) = delete;
  Q8Scratch& operator=(const Q8Scratch&) = delete;
  ~Q8Scratch();
  void* reserve(size_t bytes, cudaStream_t stream);

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::vector<void*> retired_;
};

}  // namespace tessera::gpu
