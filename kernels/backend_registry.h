#pragma once
// Creates backends: those built into this binary (the CPU, and CUDA where
// the build links it) and those loaded as plugins (kernels/backend_plugins.h).
// Each backend folder under kernels/ contributes one factory.
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"

namespace tessera {

// The backends built into this binary.
std::vector<BackendFactory> builtin_backends();
// Those and every plugin that loaded: what create_backend chooses from.
std::vector<BackendFactory> available_backends();

// The backend for `device`; throws tessera::Error when no backend of that
// kind is present (saying why, where a plugin did not load) or the device is absent.
std::unique_ptr<Backend> create_backend(const Device& device, const BackendOptions& options = {});

}  // namespace tessera
