#pragma once
// The CUDA backend (and, compiled through gpu_runtime.h, the ROCm one):
// device memory from cudaMalloc, one non-blocking stream per backend, and
// kernels launched on that stream.
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"

namespace tessera {

BackendFactory cuda_backend_factory();

// Why no CUDA device can be used (no driver, no GPU), or empty when one can.
std::string cuda_unusable_devices();

}  // namespace tessera
