#include "kernels/backend_registry.h"

#include "engine/error.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef TESSERA_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace tessera {

std::vector<BackendFactory> compiled_backends() {
  std::vector<BackendFactory> factories;
  factories.push_back(cpu_backend_factory());
#ifdef TESSERA_WITH_CUDA
  factories.push_back(cuda_backend_factory());
#endif
  return factories;
}

std::unique_ptr<Backend> create_backend(const Device& device) {
  for (const BackendFactory& factory : compiled_backends()) {
    if (factory.kind != device.kind) continue;
    const int count = factory.device_count();
    if (device.index < 0 || device.index >= count) {
      throw Error("device " + device_name(device) + ": not present (" + std::to_string(count) + " " +
                  factory.name + " device(s) found)");
    }
    return factory.create(device.index);
  }
  throw Error("device " + device_name(device) + ": this build has no backend for it");
}

}  // namespace tessera
