#pragma once
// The served models and the daemon's serving state, which health checks
// report: loading until every model is up, then ready until a drain or an
// engine fault. While ready, reload() swaps in a new model list: handlers
// hold the model they serve a request from (a shared handle), so a model
// taken out of the list lives until its last request is answered.
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

using ModelHandle = std::shared_ptr<ServedModel>;

// What a reload did, by model name.
struct ReloadReport {
  std::vector<std::string> added, removed, replaced, kept;
  std::string describe() const;
};

class ModelRegistry {
 public:
  explicit ModelRegistry(std::shared_ptr<prometheus::Registry> metrics) : metrics_(std::move(metrics)) {}

  // Loads every model; on failure the state becomes kFailed and the error
  // is rethrown. With `ranks`, each model is rank 0 of its tensor-parallel
  // group. `on_fault` hears of any model's engine fault.
  void load(const std::vector<ModelConfig>& models, ParallelRanks* ranks = nullptr,
            const ModelLoop::FaultListener& on_fault = {});

  // Null when no model has that name (or models are still loading). A model
  // a reload took out is still found while it drains, so requests naming it
  // get its loop's 503 rather than a 404.
  ModelHandle find(const std::string& name) const;
  // The models served now, in the config's order.
  std::vector<ModelHandle> models() const;

  // Serves `models` from now on (names unique): models new by name are
  // loaded, those whose entry changed are loaded anew, and both are switched
  // in together once all loaded; models gone from the list and the replaced
  // ones then stop admitting and drain (their requests get `drain_timeout`
  // to finish, the rest end with an error) before they are unloaded. Any
  // load failure throws before anything changed. One reload at a time; not
  // with parallel ranks, nor before the first load is ready.
  ReloadReport reload(const std::vector<ModelConfig>& models, std::chrono::milliseconds drain_timeout);

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
  mutable std::mutex models_mutex_;   // guards models_ and retiring_, never held across a load or drain
  std::vector<ModelHandle> models_;
  std::vector<ModelHandle> retiring_;  // taken out by a reload, draining
  std::mutex reload_mutex_;
  bool parallel_ = false;              // loaded with parallel ranks: no reload
  ModelLoop::FaultListener on_fault_;
  std::atomic<ServingState> state_{ServingState::kLoading};
  std::mutex health_mutex_;
  std::function<void(bool)> health_listener_;
};

}  // namespace tessera
