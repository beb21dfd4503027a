#pragma once
#include "kernels/backend.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

bool can_dequantize(DType dtype);
void launch_dequantize(const DequantizeArgs& args, cudaStream_t stream);

}  // namespace tessera::gpu
