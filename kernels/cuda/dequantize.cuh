#pragma once
#include "kernels/backend.h"

namespace tessera::gpu {

bool can_dequantize(DType dtype);
// Queues the dequantisation on `stream` (a cudaStream_t).
void launch_dequantize(const DequantizeArgs& args, void* stream);

}  // namespace tessera::gpu
