#include "kernels/backend_registry.h"

#include "engine/core/error.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "kernels/backend_plugins.h"

namespace tessera {

std::vector<BackendFactory> builtin_backends() {
  std::vector<BackendFactory> factories;
  factories.push_back(cpu_backend_factory());
  return factories;
}

std::vector<BackendFactory> available_backends() {
  std::vector<BackendFactory> factories = builtin_backends();
  const LoadedPlugins& plugins = backend_plugins();
  factories.insert(factories.end(), plugins.factories.begin(), plugins.factories.end());
  return factories;
}

namespace {

// Why no backend of `kind` is present: the plugins of that name that did not load.
std::string absent_because(const Device& device) {
  const std::string kind(device.kind.name());
  std::string reasons;
  for (const PluginReport& report : backend_plugins().reports) {
    if (!report.loaded && report.path.find("libtessera-backend-" + kind) != std::string::npos) {
      reasons += "; " + report.path + ": " + report.reason;
    }
  }
  return reasons.empty() ? "this build has no backend for it (no libtessera-backend-" + kind + ".so found)" : reasons.substr(2);
}

}  // namespace

std::unique_ptr<Backend> create_backend(const Device& device, const BackendOptions& options) {
  for (const BackendFactory& factory : available_backends()) {
    if (factory.kind != device.kind) continue;
    const int count = factory.device_count();
    if (device.index < 0 || device.index >= count) {
      std::string why;
      for (const PluginReport& report : backend_plugins().reports) {
        if (report.loaded && report.backend == factory.name && !report.unusable_devices.empty()) why = "; " + report.unusable_devices;
      }
      throw Error("device " + device_name(device) + ": not present (" + std::to_string(count) + " " + factory.name +
                  " device(s) found" + why + ")");
    }
    return factory.create(device.index, options);
  }
  throw Error("device " + device_name(device) + ": " + absent_because(device));
}

}  // namespace tessera
