#include "server/serving/model_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "engine/core/error.h"
#include "server/serving/api_error.h"
#include "server/serving/memory_budget.h"
#include "server/serving/model_loader.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// Freed weights and buffers go back to the system, so the resident set
// reflects the models loaded now.
void return_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

const char* model_state_name(ModelState state) {
  switch (state) {
    case ModelState::kLoaded: return "loaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kSleeping: return "sleeping";
  }
  return "";
}

// One configured model. `served`, `state` and `footprint` are guarded by
// models_mutex_; `last_used` is touched by leases as they are made and
// released, from any thread.
struct ModelRegistry::Slot {
  ModelConfig config;
  size_t index = 0;
  ModelState state = ModelState::kSleeping;
  ModelHandle served;      // while loaded
  uint64_t footprint = 0;  // the last load's, or the estimate before the first
  std::atomic<int64_t> last_used{0};

  void touch() { last_used = Clock::now().time_since_epoch().count(); }
  Clock::time_point last_use() const { return Clock::time_point(Clock::duration(last_used.load())); }
  // Held by nothing but the slot: no request, no reader.
  bool idle() const { return state == ModelState::kLoaded && served.use_count() == 1; }
  // The loaded model, taken out; the slot sleeps.
  ModelHandle take_out() {
    state = ModelState::kSleeping;
    return std::move(served);
  }
};

ModelRegistry::ModelRegistry(std::shared_ptr<prometheus::Registry> metrics, RegistryOptions options)
    : metrics_(std::move(metrics)), options_(options), lifecycle_(*metrics_) {
  lifecycle_.set_budget(options_.memory_budget_bytes);
  sweeper_ = std::thread([this] {
    std::unique_lock lock(sweeper_mutex_);
    while (!sweeper_wake_.wait_for(lock, std::chrono::seconds(1), [this] { return sweeper_stop_; })) {
      lock.unlock();
      sweep_idle();
      lock.lock();
    }
  });
}

ModelRegistry::~ModelRegistry() {
  {
    std::lock_guard lock(sweeper_mutex_);
    sweeper_stop_ = true;
  }
  sweeper_wake_.notify_all();
  sweeper_.join();
}

void ModelRegistry::require_serving() const {
  switch (state()) {
    case ServingState::kReady: return;
    case ServingState::kLoading: throw ApiError(503, "server_error", "models are still loading");
    case ServingState::kDraining: throw ApiError(503, "server_error", "the server is shutting down");
    case ServingState::kFailed: throw ApiError(503, "server_error", "the models failed to load");
  }
}

ModelHandle ModelRegistry::load_slot(const Slot& slot, ParallelRanks* ranks) {
  std::lock_guard load_lock(load_mutex_);
  const auto t0 = Clock::now();
  try {
    ModelHandle m = load_served_model(slot.config, slot.index, *metrics_, ranks, on_fault_, options_.cache);
    lifecycle_.loaded(slot.config.name, std::chrono::duration<double>(Clock::now() - t0).count(), m->footprint_bytes);
    return m;
  } catch (...) {
    lifecycle_.failed(slot.config.name);
    throw;
  }
}

ModelRegistry::SlotPtr ModelRegistry::make_slot(const ModelConfig& config, size_t index) const {
  auto slot = std::make_shared<Slot>();
  slot->config = config;
  slot->index = index;
  slot->footprint = estimated_footprint_bytes(config);
  slot->touch();
  return slot;
}

void ModelRegistry::load(const std::vector<ModelConfig>& models, ParallelRanks* ranks, const ModelLoop::FaultListener& on_fault) {
  try {
    std::vector<SlotPtr> slots;
    for (size_t i = 0; i < models.size(); ++i) slots.push_back(make_slot(models[i], i));
    {
      std::lock_guard lock(models_mutex_);
      slots_ = slots;
      parallel_ = ranks != nullptr;
      on_fault_ = on_fault;
    }
    uint64_t in_use = 0;
    for (const SlotPtr& slot : slots) {
      if (slot->config.load != "startup") continue;
      const uint64_t budget = options_.memory_budget_bytes;
      if (budget > 0 && in_use + slot->footprint > budget) {
        throw Error("model '" + slot->config.name + "' needs about " + mib(slot->footprint) + "; with the startup models before it (" +
                    mib(in_use) + ") that passes server.memory_budget_mb (" + mib(budget) + ")");
      }
      ModelHandle m = load_slot(*slot, ranks);
      std::lock_guard lock(models_mutex_);
      slot->footprint = m->footprint_bytes;
      slot->served = std::move(m);
      slot->state = ModelState::kLoaded;
      in_use += slot->footprint;
    }
    state_ = ServingState::kReady;
    publish_health();
  } catch (...) {
    state_ = ServingState::kFailed;
    publish_health();
    throw;
  }
}

ModelRegistry::SlotPtr ModelRegistry::slot_named(const std::string& name) const {
  for (const SlotPtr& s : slots_) {
    if (s->config.name == name) return s;
  }
  return nullptr;
}

ModelHandle ModelRegistry::lease(const SlotPtr& slot) const {
  slot->touch();
  ModelHandle held = slot->served;
  ServedModel* model = held.get();
  // The lease keeps the model (through `held`) and marks when it was last used.
  return ModelHandle(model, [slot, held = std::move(held)](ServedModel*) mutable {
    slot->touch();
    held.reset();
  });
}

ModelHandle ModelRegistry::acquire(const std::string& name, LoadWait* waited) {
  const ServingState serving = state_.load();
  if (serving == ServingState::kLoading || serving == ServingState::kFailed) return nullptr;
  const auto start = Clock::now();
  const auto deadline = start + options_.load_timeout;
  std::unique_lock lock(models_mutex_);
  for (bool waited_here = false;; waited_here = true) {
    const SlotPtr slot = slot_named(name);
    if (!slot) {
      for (const auto& m : retiring_) {
        if (m->name() == name) return m;
      }
      return nullptr;
    }
    if (slot->state == ModelState::kLoaded) {
      if (waited && waited_here) waited->seconds = std::chrono::duration<double>(Clock::now() - start).count();
      return lease(slot);
    }
    require_serving();  // reads only the state
    if (slot->state == ModelState::kLoading) {
      if (slots_changed_.wait_until(lock, deadline) == std::cv_status::timeout && slot->state == ModelState::kLoading) {
        throw ApiError(503, "server_error", "the model '" + name + "' is still loading after " +
                                                std::to_string(options_.load_timeout.count() / 1000) + " s (server.model_load_timeout_s)");
      }
      continue;
    }
    load_on_demand(slot, lock, deadline);
  }
}

void ModelRegistry::load_on_demand(const SlotPtr& slot, std::unique_lock<std::mutex>& lock, Clock::time_point deadline) {
  const uint64_t budget = options_.memory_budget_bytes;
  EvictionPlan plan;
  for (;;) {
    std::vector<ResidentModel> resident;
    for (const SlotPtr& s : slots_) {
      if (s->state != ModelState::kSleeping) resident.push_back({s->config.name, s->footprint, s->idle(), s->last_use()});
    }
    for (const ModelHandle& m : retiring_) resident.push_back({m->name(), m->footprint_bytes, false, {}});
    plan = plan_eviction(budget, slot->footprint, resident);
    if (plan.fits) break;
    require_serving();
    const std::string name = slot->config.name;
    if (!plan.fits_when_idle) {
      throw ApiError(503, "server_error", "the model '" + name + "' needs about " + mib(slot->footprint) +
                                              ", more than server.memory_budget_mb (" + mib(budget) + ")");
    }
    if (Clock::now() >= deadline) {
      throw ApiError(503, "server_error", "the model '" + name + "' cannot be loaded: the memory budget (" + mib(budget) +
                                              ") is held by models serving requests");
    }
    // Requests end without a word to the registry: look again shortly.
    slots_changed_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
    if (slot->state != ModelState::kSleeping || slot_named(name) != slot) return;  // another request took it on
  }
  std::vector<ModelHandle> victims;
  for (const std::string& name : plan.unload) {
    victims.push_back(slot_named(name)->take_out());
  }
  slot->state = ModelState::kLoading;
  lock.unlock();
  unload(std::move(victims), "memory_budget");
  ModelHandle loaded;
  std::string error;
  try {
    loaded = load_slot(*slot, nullptr);
  } catch (const std::exception& e) {
    error = e.what();
  }
  lock.lock();
  slots_changed_.notify_all();
  if (!loaded) {
    slot->state = ModelState::kSleeping;
    throw ApiError(503, "server_error", "the model '" + slot->config.name + "' failed to load: " + error);
  }
  if (state_.load() != ServingState::kReady) {
    // The daemon's drain began during the load and did not reach this model:
    // it refuses work like the others (it has none yet, so this is quick).
    loaded->loop->drain(std::chrono::milliseconds(0), "the server is shutting down");
  }
  slot->footprint = loaded->footprint_bytes;
  slot->served = std::move(loaded);
  slot->state = ModelState::kLoaded;
}

void ModelRegistry::unload(std::vector<ModelHandle> models, const std::string& reason) {
  if (models.empty()) return;
  for (const ModelHandle& m : models) {
    spdlog::info("model {} unloaded ({}): {} freed", m->name(), reason, mib(m->footprint_bytes));
    m->loop->drain(std::chrono::milliseconds(0), "model '" + m->name() + "' was unloaded (" + reason + ")");
    m->metrics->clear_gauges();
    lifecycle_.unloaded(m->name(), reason);
  }
  models.clear();
  return_freed_memory();
}

void ModelRegistry::sweep_idle() {
  if (state_.load() != ServingState::kReady) return;
  std::vector<ModelHandle> idle;
  {
    std::lock_guard lock(models_mutex_);
    const auto now = Clock::now();
    for (const SlotPtr& s : slots_) {
      const double keep_alive = s->config.keep_alive_s;
      if (keep_alive < 0.0 || !s->idle() || std::chrono::duration<double>(now - s->last_use()).count() < keep_alive) continue;
      idle.push_back(s->take_out());
    }
  }
  unload(std::move(idle), "idle");
}

std::string ReloadReport::describe() const {
  std::string out;
  const auto list = [&out](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += (out.empty() ? "" : "; ") + std::string(what) + ":";
    for (const std::string& n : names) out += " " + n;
  };
  list("added", added);
  list("replaced", replaced);
  list("removed", removed);
  list("kept", kept);
  return out.empty() ? "no models" : out;
}

ReloadReport ModelRegistry::reload(const std::vector<ModelConfig>& wanted, std::chrono::milliseconds drain_timeout) {
  std::lock_guard reload_lock(reload_mutex_);
  if (state_.load() != ServingState::kReady) throw Error("reload: the server is " + state_name() + ", not ready");
  if (parallel_) throw Error("reload: models served by parallel ranks cannot be reloaded; restart the group");
  std::vector<SlotPtr> current;
  {
    std::lock_guard lock(models_mutex_);
    current = slots_;
  }
  ReloadReport report;
  // Everything new or changed loads before anything is switched: a failure
  // leaves the served list as it was.
  std::vector<SlotPtr> next;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const auto same = std::find_if(current.begin(), current.end(), [&](const SlotPtr& s) { return s->config.name == wanted[i].name; });
    if (same != current.end() && (*same)->config == wanted[i]) {
      next.push_back(*same);
      report.kept.push_back(wanted[i].name);
      continue;
    }
    (same != current.end() ? report.replaced : report.added).push_back(wanted[i].name);
    SlotPtr slot = make_slot(wanted[i], i);
    if (wanted[i].load == "startup") {
      try {
        slot->served = load_slot(*slot, nullptr);
      } catch (const std::exception& e) {
        throw Error(std::string("reload: ") + e.what());
      }
      slot->footprint = slot->served->footprint_bytes;
      slot->state = ModelState::kLoaded;
    }
    next.push_back(std::move(slot));
  }
  std::vector<ModelHandle> retired;
  {
    std::lock_guard lock(models_mutex_);
    // A drain that began while the new models loaded wins: they are dropped.
    if (state_.load() != ServingState::kReady) throw Error("reload: the server began to " + state_name() + " meanwhile");
    for (const SlotPtr& s : slots_) {
      if (std::find(next.begin(), next.end(), s) != next.end()) continue;
      if (std::find(report.replaced.begin(), report.replaced.end(), s->config.name) == report.replaced.end()) {
        report.removed.push_back(s->config.name);
      }
      if (!s->served) continue;  // asleep (or loading: its request keeps that copy)
      retired.push_back(s->take_out());
    }
    slots_ = next;
    retiring_.insert(retiring_.end(), retired.begin(), retired.end());
    slots_changed_.notify_all();
  }
  publish_health();
  retire(retired, report, drain_timeout);
  return report;
}

void ModelRegistry::retire(const std::vector<ModelHandle>& retired, const ReloadReport& report, std::chrono::milliseconds drain_timeout) {
  std::vector<std::thread> drains;
  for (const auto& m : retired) {
    drains.emplace_back([&m, drain_timeout] { m->loop->drain(drain_timeout, "model '" + m->name() + "' was unloaded by a config reload"); });
  }
  for (auto& t : drains) t.join();
  {
    std::lock_guard lock(models_mutex_);
    std::erase_if(retiring_, [&](const ModelHandle& m) { return std::find(retired.begin(), retired.end(), m) != retired.end(); });
  }
  for (const auto& m : retired) {
    // A removed model's gauges would otherwise keep their last values (a
    // replaced one shares them with its successor).
    const bool removed = std::find(report.removed.begin(), report.removed.end(), m->name()) != report.removed.end();
    if (removed) m->metrics->clear_gauges();
    const ModelHandle successor = removed ? nullptr : find(m->name());
    lifecycle_.unloaded(m->name(), "reload", successor ? successor->footprint_bytes : 0);
  }
  return_freed_memory();
}

void ModelRegistry::set_health_listener(std::function<void(bool)> listener) {
  {
    std::lock_guard lock(health_mutex_);
    health_listener_ = std::move(listener);
  }
  publish_health();
}

void ModelRegistry::publish_health() {
  std::lock_guard lock(health_mutex_);
  if (health_listener_) health_listener_(healthy());
}

ModelHandle ModelRegistry::find(const std::string& name) const {
  if (state_.load() == ServingState::kLoading || state_.load() == ServingState::kFailed) return nullptr;
  std::lock_guard lock(models_mutex_);
  if (const SlotPtr slot = slot_named(name); slot && slot->served) return slot->served;
  for (const auto& m : retiring_) {
    if (m->name() == name) return m;
  }
  return nullptr;
}

std::vector<ModelHandle> ModelRegistry::models() const {
  std::lock_guard lock(models_mutex_);
  std::vector<ModelHandle> out;
  for (const SlotPtr& s : slots_) {
    if (s->served) out.push_back(s->served);
  }
  return out;
}

std::vector<ModelStatus> ModelRegistry::statuses() const {
  std::lock_guard lock(models_mutex_);
  std::vector<ModelStatus> out;
  for (const SlotPtr& s : slots_) out.push_back({s->config.name, s->state, s->served});
  return out;
}

bool ModelRegistry::asleep(const std::string& name) const {
  std::lock_guard lock(models_mutex_);
  const SlotPtr slot = slot_named(name);
  return slot && slot->state != ModelState::kLoaded;
}

std::vector<std::string> ModelRegistry::names() const {
  std::lock_guard lock(models_mutex_);
  std::vector<std::string> out;
  for (const SlotPtr& s : slots_) out.push_back(s->config.name);
  return out;
}

bool ModelRegistry::healthy() const {
  if (state_.load() != ServingState::kReady) return false;
  for (const auto& m : models()) {
    if (m->loop->state() != LoopState::kReady) return false;
  }
  return true;
}

std::string ModelRegistry::state_name() const {
  switch (state_.load()) {
    case ServingState::kLoading: return "loading";
    case ServingState::kReady:
      for (const auto& m : models()) {
        if (m->loop->state() == LoopState::kFaulted) return "engine fault in model " + m->name();
      }
      return "ready";
    case ServingState::kDraining: return "draining";
    case ServingState::kFailed: return "failed to load";
  }
  return "";
}

void ModelRegistry::drain(std::chrono::milliseconds timeout) {
  state_ = ServingState::kDraining;
  publish_health();
  std::vector<ModelHandle> all = models();
  {
    std::lock_guard lock(models_mutex_);
    all.insert(all.end(), retiring_.begin(), retiring_.end());
    slots_changed_.notify_all();  // requests waiting for a load hear of it
  }
  std::vector<std::thread> drains;
  for (const auto& m : all) drains.emplace_back([&m, timeout] { m->loop->drain(timeout); });
  for (auto& t : drains) t.join();
}

void ModelRegistry::refresh_metrics() const {
  if (state_.load() == ServingState::kLoading) return;
  for (const auto& m : models()) m->metrics->refresh(m->loop->stats(), m->loop->runner().backend());
}

}  // namespace tessera
