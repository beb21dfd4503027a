#pragma once
// The served models and the daemon's serving state, which health checks
// report: loading until every model is up, then ready until a drain or an
// engine fault.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <memory>
#include <prometheus/registry.h>
#include <string>
#include <vector>

#include "server/parallel/parallel_ranks.h"
#include "server/serving/served_model.h"

namespace tessera {

enum class ServingState : uint8_t { kLoading, kReady, kDraining, kFailed };

class ModelRegistry {
 public:
  explicit ModelRegistry(std::shared_ptr<prometheus::Registry> metrics) : metrics_(std::move(metrics)) {}

  // Loads every model; on failure the state becomes kFailed and the error
  // is rethrown. With `ranks`, each model is rank 0 of its tensor-parallel
  // group. `on_fault` hears of any model's engine fault.
  void load(const std::vector<ModelConfig>& models, ParallelRanks* ranks = nullptr,
            const ModelLoop::FaultListener& on_fault = {});

  // Null when no model has that name (or models are still loading).
  ServedModel* find(const std::string& name) const;
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }

  ServingState state() const { return state_.load(); }
  // The one check before any work is admitted, for every front end: throws
  // ApiError 503 while loading, draining or after a failed load.
  void require_serving() const;
  // Ready and every engine alive.
  bool healthy() const;
  std::string state_name() const;

  // Stops admitting, lets in-flight requests finish within `timeout`, then
  // ends the rest with an error.
  void drain(std::chrono::milliseconds timeout);

  // Called with healthy() whenever it may have changed: right after loading
  // and when a drain starts (and by anyone through publish_health(), which
  // watchers of engine faults call). Calls are serialised.
  void set_health_listener(std::function<void(bool)> listener);
  void publish_health();

  // Refreshes each model's scheduler gauges, for a scrape.
  void refresh_metrics() const;
  prometheus::Registry& metrics() const { return *metrics_; }

 private:
  std::shared_ptr<prometheus::Registry> metrics_;
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::atomic<ServingState> state_{ServingState::kLoading};
  std::mutex health_mutex_;
  std::function<void(bool)> health_listener_;
};

}  // namespace tessera
