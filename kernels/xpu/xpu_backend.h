#pragma once
// The XPU backend: OpenCL devices (Intel GPUs through their compute runtime,
// any other OpenCL 2.0+ driver, PoCL on a CPU), one in-order queue per
// stream, kernels compiled at load from sources embedded in the binary.
#include <string>

#include "kernels/backend_factory.h"

namespace tessera {

BackendFactory xpu_backend_factory();

// Why no XPU device can be used, one line per device or platform; empty
// when every device listed is usable.
std::string xpu_unusable_devices();

}  // namespace tessera
