#include "kernels/backend_plugins.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "kernels/backend_plugin.h"

namespace tessera {
namespace {

constexpr std::string_view kPrefix = "libtessera-backend-", kSuffix = ".so";

std::string executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

bool is_plugin_file(const std::string& name) {
  return name.size() > kPrefix.size() + kSuffix.size() && name.compare(0, kPrefix.size(), kPrefix) == 0 &&
         name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

// Opens `path` and asks it for its backend; the library stays loaded for
// the life of the process (its code runs until exit).
PluginReport load_one(const std::string& path, std::vector<BackendFactory>& factories) {
  PluginReport report;
  report.path = path;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    report.reason = error ? error : "dlopen failed";
    return report;
  }
  auto entry = reinterpret_cast<const BackendPlugin* (*)()>(dlsym(library, "tessera_backend_plugin"));
  if (!entry) {
    report.reason = "exports no tessera_backend_plugin";
    dlclose(library);
    return report;
  }
  const BackendPlugin* plugin = entry();
  if (!plugin || !plugin->interface_tag || std::strcmp(plugin->interface_tag, TESSERA_BACKEND_INTERFACE_TAG) != 0) {
    report.reason = std::string("built from other sources (interface ") + (plugin && plugin->interface_tag ? plugin->interface_tag : "?") +
                    ", this binary's " + TESSERA_BACKEND_INTERFACE_TAG + ")";
    dlclose(library);
    return report;
  }
  const BackendFactory factory = plugin->factory();
  report.backend = factory.name;
  for (const BackendFactory& known : factories) {
    if (known.kind == factory.kind) {
      report.reason = "a " + factory.name + " backend is already present";
      dlclose(library);
      return report;
    }
  }
  report.loaded = true;
  if (plugin->unusable_devices) report.unusable_devices = plugin->unusable_devices();
  factories.push_back(factory);
  return report;
}

LoadedPlugins load_all() {
  LoadedPlugins loaded;
  loaded.searched = backend_plugin_dirs();
  std::set<std::string> names_seen;
  std::vector<BackendFactory> known = builtin_backends();
  for (const std::string& dir : loaded.searched) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (is_plugin_file(name) && names_seen.insert(name).second) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      PluginReport report = load_one(file, known);
      if (report.loaded) loaded.factories.push_back(known.back());
      loaded.reports.push_back(std::move(report));
    }
  }
  return loaded;
}

}  // namespace

std::vector<std::string> backend_plugin_dirs() {
  if (const char* dir = std::getenv("TESSERA_BACKEND_DIR"); dir && *dir) return {dir};
  const std::string exe = executable_dir();
  if (exe.empty()) return {};
  return {exe + "/backends", exe + "/../backends", exe + "/../lib/tessera/backends"};
}

const LoadedPlugins& backend_plugins() {
  static const LoadedPlugins plugins = load_all();
  return plugins;
}

}  // namespace tessera
