#pragma once
// Linear layers on the GPU: y = x · Wᵀ (+ bias) for weights stored in the
// chunk-decodable formats (kernels/cuda/gguf_chunks.cuh), read in place in
// their checkpoint layout. GGUF block weights meet activations quantized to
// 8 bits as the CPU quantizes them, float weights meet float activations.
#include <memory>

#include "kernels/backend.h"
#include "kernels/offload_backend.h"
#include "kernels/cuda/activation_q8.cuh"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

// A weight resident in device memory, rows as the checkpoint stores them.
using GpuLinear = OffloadLinear;

// Why `weight` has no kernel here, or empty when it has one.
std::string linear_refusal(const QuantizedLinear& weight);

void launch_linear(const LinearArgs& args, cudaStream_t stream, Q8Scratch& scratch);

}  // namespace tessera::gpu
