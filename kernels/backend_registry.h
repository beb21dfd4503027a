#pragma once
// Creates the backends compiled into this binary. Each backend folder under
// kernels/ contributes one factory; the list is fixed at build time.
#include <memory>
#include <string>
#include <vector>

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

std::vector<BackendFactory> compiled_backends();

// The backend for `device`; throws tessera::Error when that kind is not
// compiled in or the device is absent.
std::unique_ptr<Backend> create_backend(const Device& device, const BackendOptions& options = {});

// "cpu", "cuda", "cuda:1" …; throws tessera::Error naming the text otherwise.
Device parse_device(const std::string& text);

}  // namespace tessera
