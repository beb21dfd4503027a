#pragma once
// Prometheus metrics of models coming and going (label model_name="<name>"):
// loads by outcome and their duration, unloads by reason, and the memory
// each loaded model counts against the daemon's budget.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <string>

namespace tessera {

class LifecycleMetrics {
 public:
  explicit LifecycleMetrics(prometheus::Registry& registry);

  void set_budget(uint64_t bytes) { budget_.Set(double(bytes)); }
  // outcome: "loaded" or "failed"; a loaded model then holds `bytes`.
  void loaded(const std::string& model, double seconds, uint64_t bytes);
  void failed(const std::string& model);
  // reason: "idle" (keep_alive passed), "memory_budget" (room for another
  // model) or "reload" (the config no longer serves it as it was; a
  // successor loaded under the same name holds `successor_bytes`).
  void unloaded(const std::string& model, const std::string& reason, uint64_t successor_bytes = 0);

 private:
  prometheus::Family<prometheus::Counter>& loads_;
  prometheus::Family<prometheus::Counter>& unloads_;
  prometheus::Family<prometheus::Histogram>& load_seconds_;
  prometheus::Family<prometheus::Gauge>& memory_;
  prometheus::Family<prometheus::Gauge>& loaded_;
  prometheus::Gauge& budget_;
};

}  // namespace tessera
