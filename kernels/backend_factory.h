#pragma once
// How a backend is made: what each backend folder (built in or a plugin)
// hands the registry (kernels/backend_registry.h).
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace tessera {

struct BackendOptions {
  int threads = 0;  // host threads for the CPU backend (0: one per hardware thread)
};

struct BackendFactory {
  DeviceKind kind;
  std::string name;
  // Number of usable devices of this kind on this machine (0 when none).
  int (*device_count)();
  std::unique_ptr<Backend> (*create)(int device_index, const BackendOptions& options);
};


}  // namespace tessera
