#pragma once
// Prometheus metrics of one served model (label model="<name>"). Names follow
// vLLM's with the tessera: prefix; docs/serving-api.md maps them. Gauges that mirror
// scheduler state are refreshed from SchedulerStats before each scrape.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <mutex>
#include <string>

#include "kernels/backend.h"
#include "scheduler/scheduler.h"

namespace tessera {

class ModelMetrics {
 public:
  ModelMetrics(prometheus::Registry& registry, const std::string& model);

  void observe_queue_time(double seconds) { queue_time_.Observe(seconds); }
  void observe_first_token(double seconds) { ttft_.Observe(seconds); }
  void observe_inter_token(double seconds) { itl_.Observe(seconds); }
  // One finished request: reason is "stop", "length", "abort" or "error".
  void observe_finished(const std::string& reason, double e2e_seconds, int prompt_tokens, int generation_tokens);
  void count_rejected(const std::string& reason);
  void count_cancelled() { cancelled_.Increment(); }
  // One sequence admitted to the scheduler; each ends as exactly one
  // request_success_total (any reason) or requests_cancelled_total.
  void count_accepted() { accepted_.Increment(); }

  // Copies the scheduler's gauges and counters in, and the memory of the
  // model's device, before a scrape.
  void refresh(const SchedulerStats& stats, const Backend& device);
  // Zeroes the gauges of a model no longer served (its counters stay).
  void clear_gauges();

 private:
  prometheus::Registry& registry_;
  std::string model_;
  prometheus::Gauge& running_;
  prometheus::Gauge& waiting_;
  prometheus::Gauge& kv_usage_;
  prometheus::Counter& prefix_hits_;
  prometheus::Counter& prefix_queries_;
  prometheus::Histogram& ttft_;
  prometheus::Histogram& itl_;
  prometheus::Histogram& e2e_;
  prometheus::Histogram& queue_time_;
  prometheus::Counter& prompt_tokens_;
  prometheus::Counter& generation_tokens_;
  prometheus::Counter& preemptions_;
  prometheus::Counter& cancelled_;
  prometheus::Counter& accepted_;
  prometheus::Counter& draft_tokens_;
  prometheus::Counter& accepted_draft_tokens_;
  prometheus::Gauge* device_used_ = nullptr;   // labelled with the device once it is known
  prometheus::Gauge* device_total_ = nullptr;
  std::mutex refresh_mutex_;  // scrapes may run concurrently
  uint64_t preemptions_seen_ = 0;
  uint64_t prefix_queries_seen_ = 0;
  uint64_t prefix_hits_seen_ = 0;
  uint64_t draft_tokens_seen_ = 0;
  uint64_t accepted_draft_tokens_seen_ = 0;
};

}  // namespace tessera
