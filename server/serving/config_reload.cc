#include "server/serving/config_reload.h"

#include <spdlog/spdlog.h>

namespace tessera {

ConfigReload::ConfigReload(ModelRegistry& registry, std::function<std::vector<ModelConfig>()> read_models,
                           std::chrono::milliseconds drain_timeout, prometheus::Registry& metrics)
    : registry_(registry),
      read_models_(std::move(read_models)),
      drain_timeout_(drain_timeout),
      reloads_(prometheus::BuildCounter()
                   .Name("tessera:config_reloads_total")
                   .Help("Config reloads (SIGHUP) by outcome: applied, or failed (nothing changed)")
                   .Register(metrics)),
      applied_(reloads_.Add({{"outcome", "applied"}})),
      failed_(reloads_.Add({{"outcome", "failed"}})) {}

ConfigReload::~ConfigReload() {
  wait_idle();
  if (thread_.joinable()) thread_.join();
}

void ConfigReload::request() {
  std::lock_guard lock(mutex_);
  if (running_) {
    pending_ = true;
    return;
  }
  running_ = true;
  if (thread_.joinable()) thread_.join();  // the last reload's thread, finished
  thread_ = std::thread([this] { run(); });
}

void ConfigReload::run() {
  for (;;) {
    reload_once();
    std::lock_guard lock(mutex_);
    if (!pending_) {
      running_ = false;
      idle_.notify_all();
      return;
    }
    pending_ = false;
  }
}

void ConfigReload::reload_once() {
  std::string outcome;
  bool applied = false;
  try {
    spdlog::info("reload: reading the config again");
    const ReloadReport report = registry_.reload(read_models_(), drain_timeout_);
    outcome = "applied: " + report.describe();
    applied_.Increment();
    applied = true;
    spdlog::info("reload {}", outcome);
  } catch (const std::exception& e) {
    outcome = std::string("failed, nothing changed: ") + e.what();
    failed_.Increment();
    spdlog::error("reload {}", outcome);
  }
  std::lock_guard lock(mutex_);
  last_ = {applied, outcome};
}

ConfigReload::Outcome ConfigReload::reload_and_wait() {
  request();
  wait_idle();
  std::lock_guard lock(mutex_);
  return last_;
}

void ConfigReload::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return !running_; });
}

std::string ConfigReload::last_outcome() const {
  std::lock_guard lock(mutex_);
  return last_.text;
}

}  // namespace tessera
