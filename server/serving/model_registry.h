#pragma once
// The served models and the daemon's serving state, which health checks
// report: loading until every startup model is up, then ready until a drain
// or an engine fault.
//
// Each configured model is loaded, loading or sleeping. Startup models load
// before the daemon is ready; on_demand ones sleep until a request names
// one (acquire() loads it, the request waiting at most the load timeout). A
// model idle past its keep_alive goes back to sleep, and when loading one
// would pass the memory budget, the least recently used idle models sleep
// first. Handlers hold the model they serve a request from (a handle), so a
// model is never unloaded under a request, and one a reload takes out lives
// until its last request is answered.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <prometheus/registry.h>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics/lifecycle_metrics.h"
#include "server/parallel/parallel_ranks.h"
#include "server/serving/served_model.h"

namespace tessera {

enum class ServingState : uint8_t { kLoading, kReady, kDraining, kFailed };
enum class ModelState : uint8_t { kLoaded, kLoading, kSleeping };
const char* model_state_name(ModelState state);

using ModelHandle = std::shared_ptr<ServedModel>;

// What a reload did, by model name.
struct ReloadReport {
  std::vector<std::string> added, removed, replaced, kept;
  std::string describe() const;
};

struct ModelStatus {
  std::string name;
  ModelState state = ModelState::kSleeping;
  ModelHandle model;  // while loaded
};

// How long a request waited for its model to load (0: it was loaded).
struct LoadWait {
  double seconds = 0.0;
};

struct RegistryOptions {
  uint64_t memory_budget_bytes = 0;  // 0: no limit
  std::chrono::milliseconds load_timeout{300000};
  std::shared_ptr<const ArtifactCache> cache;  // for weights quantized at load; null: none
};

class ModelRegistry {
 public:
  explicit ModelRegistry(std::shared_ptr<prometheus::Registry> metrics, RegistryOptions options = {});
  ~ModelRegistry();  // stops the keep_alive sweeper
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Loads every startup model (on_demand ones sleep); on failure the state
  // becomes kFailed and the error is rethrown. With `ranks`, each model is
  // rank 0 of its tensor-parallel group. `on_fault` hears of any model's
  // engine fault.
  void load(const std::vector<ModelConfig>& models, ParallelRanks* ranks = nullptr,
            const ModelLoop::FaultListener& on_fault = {});

  // The model named `name`, loaded first if it sleeps (waiting for the
  // budget to make room, bounded by the load timeout). Null when no model
  // has that name. Throws ApiError 503 when it cannot be loaded in time or
  // within the budget, or the server is not ready. A model a reload took
  // out is still found while it drains, so requests naming it get its
  // loop's 503 rather than a 404.
  ModelHandle acquire(const std::string& name, LoadWait* waited = nullptr);
  // As acquire(), but only a loaded model: null otherwise.
  ModelHandle find(const std::string& name) const;
  // The models loaded now, in the config's order.
  std::vector<ModelHandle> models() const;
  // Every configured model, in the config's order.
  std::vector<ModelStatus> statuses() const;
  std::vector<std::string> names() const;
  // A configured model of that name that is not loaded now.
  bool asleep(const std::string& name) const;

  // Serves `models` from now on (names unique): startup models new by name
  // are loaded, those whose entry changed are loaded anew, and both are
  // switched in together once all loaded (on_demand ones are switched in
  // asleep); models gone from the list and the replaced ones then stop
  // admitting and drain (their requests get `drain_timeout` to finish, the
  // rest end with an error) before they are unloaded. Any load failure
  // throws before anything changed. One reload at a time; not with parallel
  // ranks, nor before the first load is ready. Startup models loaded by a
  // reload are not held to the memory budget.
  ReloadReport reload(const std::vector<ModelConfig>& models, std::chrono::milliseconds drain_timeout);

  ServingState state() const { return state_.load(); }
  // The one check before any work is admitted, for every front end: throws
  // ApiError 503 while loading, draining or after a failed load.
  void require_serving() const;
  // Ready and every loaded engine alive.
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
  struct Slot;
  using SlotPtr = std::shared_ptr<Slot>;

  SlotPtr make_slot(const ModelConfig& config, size_t index) const;
  SlotPtr slot_named(const std::string& name) const;  // models_mutex_ held
  // A handle that keeps the slot's model and marks its use when made and
  // when released (keep_alive counts from then); models_mutex_ held.
  ModelHandle lease(const SlotPtr& slot) const;
  // Makes room for `slot` and loads it; models_mutex_ held on entry and exit.
  void load_on_demand(const SlotPtr& slot, std::unique_lock<std::mutex>& lock,
                      std::chrono::steady_clock::time_point deadline);
  ModelHandle load_slot(const Slot& slot, ParallelRanks* ranks);  // one load at a time; counted in metrics
  // Drains (they are idle) and frees models taken out of their slots.
  void unload(std::vector<ModelHandle> models, const std::string& reason);
  // Drains the models a reload took out, then lets them go.
  void retire(const std::vector<ModelHandle>& retired, const ReloadReport& report, std::chrono::milliseconds drain_timeout);
  // Unloads the loaded models idle past their keep_alive.
  void sweep_idle();

  std::shared_ptr<prometheus::Registry> metrics_;
  RegistryOptions options_;
  LifecycleMetrics lifecycle_;
  mutable std::mutex models_mutex_;  // guards slots_ and retiring_, never held across a load or drain
  std::condition_variable slots_changed_;
  std::vector<SlotPtr> slots_;
  std::vector<ModelHandle> retiring_;  // taken out by a reload, draining
  std::mutex load_mutex_;              // loads one at a time (their memory is measured)
  std::mutex reload_mutex_;
  bool parallel_ = false;              // loaded with parallel ranks: no reload
  ModelLoop::FaultListener on_fault_;
  std::atomic<ServingState> state_{ServingState::kLoading};
  std::mutex health_mutex_;
  std::function<void(bool)> health_listener_;
  std::mutex sweeper_mutex_;
  std::condition_variable sweeper_wake_;
  bool sweeper_stop_ = false;
  std::thread sweeper_;
};

}  // namespace tessera
