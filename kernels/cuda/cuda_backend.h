#pragma once
// The CUDA backend (and, compiled through gpu_runtime.h, the ROCm one):
// device memory from cudaMalloc, one non-blocking stream per backend, and
// kernels launched on that stream.
#include <memory>

#include "kernels/backend.h"
#include "kernels/backend_registry.h"

namespace tessera {

BackendFactory cuda_backend_factory();

}  // namespace tessera
