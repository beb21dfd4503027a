#include "kernels/backend_plugins.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

bool writable_by_others(mode_t mode) { return (mode & (S_IWGRP | S_IWOTH)) != 0; }

// Why code in `dir` must not be run, or empty: anyone but its owner could
// have put it there.
std::string unsafe_dir_reason(const std::string& dir) {
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0) return {};
  if (writable_by_others(st.st_mode)) return "its directory " + dir + " is writable by other users";
  return {};
}

// Why the file must not be loaded, or empty: it is opened without blocking
// (a FIFO or device named like a plugin would block a plain open, and so
// dlopen, forever) and must be a regular file only its owner can write.
std::string plugin_file_fault(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::string("cannot be opened: ") + std::strerror(errno);
  struct stat st{};
  std::string fault;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) fault = "is not a regular file";
  else if (writable_by_others(st.st_mode)) fault = "is writable by other users";
  close(fd);
  return fault;
}

// Opens `path` and asks it for its backend; the library stays loaded for
// the life of the process (its code runs until exit).
PluginReport load_one(const std::string& path, std::vector<BackendFactory>& factories) {
  PluginReport report;
  report.path = path;
  report.reason = plugin_file_fault(path);
  if (!report.reason.empty()) return report;
  // Loaded by its path, so that the plugin's $ORIGIN (where it finds the
  // libraries shipped beside it) is its directory. The directory is one
  // only its owner can write (checked by the caller), so what was checked
  // is what loads.
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
    if (const std::string unsafe = unsafe_dir_reason(dir); !unsafe.empty()) {
      for (const std::string& file : files) loaded.reports.push_back(PluginReport{.path = file, .reason = "not loaded: " + unsafe});
      continue;
    }
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
