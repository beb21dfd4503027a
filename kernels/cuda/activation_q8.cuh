#pragma once
// Activations quantized to 8 bits per 32-element chunk on the GPU, as the
// CPU backend quantizes them (kernels/q8_rows.h): Q8_0 for Q4_0/Q5_0/Q8_0
// weights, Q8_1 for Q4_1 and Q8_K for the k-quants, with the CPU's bits.
#include <cstdint>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/cuda/gpu_runtime.h"
#include "kernels/q8_rows.h"

namespace tessera::gpu {

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
