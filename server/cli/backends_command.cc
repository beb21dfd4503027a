// tessera backends: the backends this binary can use, built in or loaded as
// plugins, with their devices, and why any plugin or device was not used.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/backend_plugins.h"
#include "kernels/backend_registry.h"
#include "server/cli/commands.h"

namespace tessera::cli {
namespace {

// Each device's description, or why it could not be opened.
nlohmann::json devices_of(const BackendFactory& factory) {
  nlohmann::json devices = nlohmann::json::array();
  const int count = factory.device_count();
  for (int i = 0; i < count; ++i) {
    const std::string name = factory.name + ":" + std::to_string(i);
    try {
      devices.push_back({{"device", name}, {"description", factory.create(i, BackendOptions{1})->describe()}});
    } catch (const std::exception& e) {
      devices.push_back({{"device", name}, {"error", e.what()}});
    }
  }
  return devices;
}

nlohmann::json inventory() {
  nlohmann::json backends = nlohmann::json::array();
  for (const BackendFactory& factory : builtin_backends()) {
    backends.push_back({{"backend", factory.name}, {"source", "built in"}, {"devices", devices_of(factory)}});
  }
  const LoadedPlugins& plugins = backend_plugins();
  nlohmann::json not_loaded = nlohmann::json::array();
  for (const PluginReport& report : plugins.reports) {
    if (!report.loaded) {
      not_loaded.push_back({{"plugin", report.path}, {"reason", report.reason}});
      continue;
    }
    for (const BackendFactory& factory : plugins.factories) {
      if (factory.name != report.backend) continue;
      backends.push_back({{"backend", factory.name},
                          {"source", report.path},
                          {"devices", devices_of(factory)},
                          {"unusable_devices", report.unusable_devices}});
    }
  }
  return {{"backends", backends}, {"plugins_not_loaded", not_loaded}, {"searched", plugins.searched}};
}

void print_text(const nlohmann::json& inv) {
  for (const auto& b : inv["backends"]) {
    std::printf("%s (%s): %zu device(s)\n", b["backend"].get<std::string>().c_str(), b["source"].get<std::string>().c_str(),
                b["devices"].size());
    for (const auto& d : b["devices"]) {
      const bool failed = d.contains("error");
      if (failed) std::printf("  %s: failed: %s\n", d["device"].get<std::string>().c_str(), d["error"].get<std::string>().c_str());
      else std::printf("  %s\n", d["description"].get<std::string>().c_str());
    }
    if (b.contains("unusable_devices") && !b["unusable_devices"].get<std::string>().empty()) {
      std::printf("  not used: %s\n", b["unusable_devices"].get<std::string>().c_str());
    }
  }
  for (const auto& p : inv["plugins_not_loaded"]) {
    std::printf("not loaded: %s: %s\n", p["plugin"].get<std::string>().c_str(), p["reason"].get<std::string>().c_str());
  }
  std::string dirs;
  for (const auto& dir : inv["searched"]) dirs += (dirs.empty() ? "" : ", ") + dir.get<std::string>();
  std::printf("plugin directories searched: %s\n", dirs.empty() ? "(none)" : dirs.c_str());
}

}  // namespace

Runner add_backends_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("backends", "List the backends and devices this binary can use, and why others are absent");
  cmd->add_flag("--json", *json, "Print the list as JSON");
  return [json] {
    const nlohmann::json inv = inventory();
    if (*json) std::printf("%s\n", inv.dump(2).c_str());
    else print_text(inv);
    return 0;
  };
}

}  // namespace tessera::cli
