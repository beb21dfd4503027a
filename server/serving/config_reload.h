#pragma once
// Re-reading the config while serving (SIGHUP): each request() starts a
// reload on its own thread, so the caller (the signal loop) never waits on
// model loads or drains. Requests that arrive during a reload are coalesced
// into one more reload after it. A config that fails to read or to load
// changes nothing; either way the outcome is logged and counted
// (tessera:config_reloads_total{outcome="applied"|"failed"}) and kept for
// last_outcome().
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/serving/model_registry.h"

namespace tessera {

class ConfigReload {
 public:
  // `read_models` reads and validates the config again (throwing on error).
  ConfigReload(ModelRegistry& registry, std::function<std::vector<ModelConfig>()> read_models,
               std::chrono::milliseconds drain_timeout, prometheus::Registry& metrics);
  ~ConfigReload();  // waits for a reload in progress
  ConfigReload(const ConfigReload&) = delete;
  ConfigReload& operator=(const ConfigReload&) = delete;

  void request();
  struct Outcome {
    bool applied = false;
    std::string text;  // as last_outcome()
  };
  // Reloads now (or after the reload in progress, joining its successor)
  // and waits for the outcome.
  Outcome reload_and_wait();
  // Blocks until no reload is running or pending.
  void wait_idle();
  // "applied: added m1; kept m0", "failed: ...", or empty before the first.
  std::string last_outcome() const;

 private:
  void run();
  void reload_once();

  ModelRegistry& registry_;
  std::function<std::vector<ModelConfig>()> read_models_;
  std::chrono::milliseconds drain_timeout_;
  prometheus::Family<prometheus::Counter>& reloads_;
  prometheus::Counter& applied_;
  prometheus::Counter& failed_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  bool running_ = false;
  bool pending_ = false;
  Outcome last_;
  std::thread thread_;
};

}  // namespace tessera
