#include "server/metrics/lifecycle_metrics.h"

namespace tessera {

LifecycleMetrics::LifecycleMetrics(prometheus::Registry& registry)
    : loads_(prometheus::BuildCounter().Name("tessera:model_loads_total").Help("Model loads, by outcome (loaded, failed)").Register(registry)),
      unloads_(prometheus::BuildCounter()
                   .Name("tessera:model_unloads_total")
                   .Help("Model unloads, by reason (idle: keep_alive passed; memory_budget: room for another model; reload)")
                   .Register(registry)),
      load_seconds_(prometheus::BuildHistogram().Name("tessera:model_load_seconds").Help("Time to load a model").Register(registry)),
      memory_(prometheus::BuildGauge()
                  .Name("tessera:model_memory_bytes")
                  .Help("Memory a loaded model counts against server.memory_budget_mb (0 when not loaded)")
                  .Register(registry)),
      loaded_(prometheus::BuildGauge().Name("tessera:model_loaded").Help("1 while the model is loaded, else 0").Register(registry)),
      budget_(prometheus::BuildGauge()
                  .Name("tessera:memory_budget_bytes")
                  .Help("server.memory_budget_mb in bytes (0: no limit)")
                  .Register(registry)
                  .Add({})) {}

void LifecycleMetrics::loaded(const std::string& model, double seconds, uint64_t bytes) {
  loads_.Add({{"model_name", model}, {"outcome", "loaded"}}).Increment();
  load_seconds_.Add({{"model_name", model}}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300})
      .Observe(seconds);
  memory_.Add({{"model_name", model}}).Set(double(bytes));
  loaded_.Add({{"model_name", model}}).Set(1);
}

void LifecycleMetrics::failed(const std::string& model) { loads_.Add({{"model_name", model}, {"outcome", "failed"}}).Increment(); }

void LifecycleMetrics::unloaded(const std::string& model, const std::string& reason, uint64_t successor_bytes) {
  unloads_.Add({{"model_name", model}, {"reason", reason}}).Increment();
  memory_.Add({{"model_name", model}}).Set(double(successor_bytes));
  loaded_.Add({{"model_name", model}}).Set(successor_bytes > 0 ? 1 : 0);
}

}  // namespace tessera
