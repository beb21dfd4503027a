#pragma once
// Backend plugins: the shared libraries libtessera-backend-*.so found at
// start in the backend directory and loaded, each adding a backend factory.
// A library that cannot load (its driver missing, built from other sources)
// is reported with the reason and skipped; the daemon runs on what loaded.
#include <string>
#include <vector>

#include "kernels/backend_registry.h"

namespace tessera {

struct PluginReport {
  std::string path;
  std::string backend;  // its factory's name, once loaded
  bool loaded = false;
  std::string reason;   // why it did not load
  std::string unusable_devices;  // what the plugin says of devices it did not use
};

struct LoadedPlugins {
  std::vector<BackendFactory> factories;
  std::vector<PluginReport> reports;
  std::vector<std::string> searched;  // the directories looked in
};

// The directories searched, in order: $TESSERA_BACKEND_DIR alone when set;
// otherwise backends/ beside the executable, ../backends (a build tree's
// test programs) and ../lib/tessera/backends (an installed tree).
std::vector<std::string> backend_plugin_dirs();

// Loads every plugin of the first directories that hold any; once per
// process, the answer then fixed.
const LoadedPlugins& backend_plugins();

}  // namespace tessera
