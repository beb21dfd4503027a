#pragma once
// The contract between the daemon and a backend built as a shared library
// (libtessera-backend-<name>.so). The library exports one C function,
// tessera_backend_plugin, returning a description whose interface tag must
// equal the daemon's: the op table is a C++ interface, so the two sides must
// come from the same sources and compiler.
#include <string>

#include "kernels/backend_factory.h"

namespace tessera {

struct BackendPlugin {
  const char* interface_tag;  // TESSERA_BACKEND_INTERFACE_TAG of the library's build
  BackendFactory (*factory)();
  // Why devices of this kind were not used, one line each; empty when none was refused.
  std::string (*unusable_devices)();
};

}  // namespace tessera

// Defined by each plugin library.
extern "C" const tessera::BackendPlugin* tessera_backend_plugin();

// A plugin's entry point, in its own source file:
//   TESSERA_BACKEND_PLUGIN(xpu_backend_factory, xpu_unusable_devices)
#define TESSERA_BACKEND_PLUGIN(factory_fn, unusable_fn)                                               \
  extern "C" __attribute__((visibility("default"))) const tessera::BackendPlugin* tessera_backend_plugin() { \
    static const tessera::BackendPlugin plugin{TESSERA_BACKEND_INTERFACE_TAG, factory_fn, unusable_fn};  \
    return &plugin;                                                                                    \
  }
