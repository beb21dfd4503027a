#pragma once
// Linear layers on the GPU: y = x · Wᵀ (+ bias) for weights stored in the
// chunk-decodable formats (kernels/cuda/gguf_chunks.cuh), read in place in
// their checkpoint layout. GGUF block weights meet activations quantized to
// 8 bits as the CPU quantizes them, float weights meet float activations.
#include <memory>

#include "kernels/backend.h"
#include "kernels/cuda/activation_q8.cuh"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

// A weight resident in device memory, rows as the checkpoint stores them.
class GpuLinear final : public PreparedLinear {
 public:
  GpuLinear(const QuantizedLinear& desc, std::shared_ptr<const void> data, std::shared_ptr<const void> bias)
      : PreparedLinear(desc), data_(std::move(data)), bias_(std::move(bias)) {}
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_.get()); }
  const float* bias() const { return static_cast<const float*>(bias_.get()); }

 private:
  std::shared_ptr<const void> data_;  // (rows, row_stride bytes)
  std::shared_ptr<const void> bias_;  // (rows) f32, or null
};

// Why `weight` has no kernel here, or empty when it has one.
std::string linear_refusal(const QuantizedLinear& weight);

void launch_linear(const LinearArgs& args, cudaStream_t stream, Q8Scratch& scratch);

}  // namespace tessera::gpu
