#include "server/metrics/model_metrics.h"

#include <algorithm>

namespace tessera {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;
using prometheus::Registry;

prometheus::Gauge& gauge(Registry& r, const std::string& name, const std::string& help, const std::string& model) {
  return BuildGauge().Name(name).Help(help).Register(r).Add({{"model_name", model}});
}

prometheus::Counter& counter(Registry& r, const std::string& name, const std::string& help, const std::string& model,
                             prometheus::Labels extra = {}) {
  extra["model_name"] = model;
  return BuildCounter().Name(name).Help(help).Register(r).Add(extra);
}

Histogram& histogram(Registry& r, const std::string& name, const std::string& help, const std::string& model,
                     Histogram::BucketBoundaries buckets) {
  return BuildHistogram().Name(name).Help(help).Register(r).Add({{"model_name", model}}, std::move(buckets));
}

const Histogram::BucketBoundaries kLatencyBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                                     0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
const Histogram::BucketBoundaries kRequestBuckets = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0};

}  // namespace

ModelMetrics::ModelMetrics(Registry& r, const std::string& model)
    : registry_(r),
      model_(model),
      running_(gauge(r, "tessera:num_requests_running", "Requests in the running batch", model)),
      waiting_(gauge(r, "tessera:num_requests_waiting", "Requests waiting to be scheduled", model)),
      kv_usage_(gauge(r, "tessera:kv_cache_usage_perc", "Fraction of KV cache pages in use (0 to 1)", model)),
      prefix_hits_(counter(r, "tessera:prefix_cache_hits_total", "Prompt tokens whose KV pages came from the prefix cache", model)),
      prefix_queries_(counter(r, "tessera:prefix_cache_queries_total", "Tokens of admitted requests looked up in the prefix cache", model)),
      ttft_(histogram(r, "tessera:time_to_first_token_seconds", "Time to first token", model, kLatencyBuckets)),
      itl_(histogram(r, "tessera:inter_token_latency_seconds", "Time between consecutive output tokens", model, kLatencyBuckets)),
      e2e_(histogram(r, "tessera:e2e_request_latency_seconds", "Request latency, arrival to last token", model, kRequestBuckets)),
      queue_time_(histogram(r, "tessera:request_queue_time_seconds", "Time waiting before first scheduled", model, kRequestBuckets)),
      prompt_tokens_(counter(r, "tessera:prompt_tokens_total", "Prefilled prompt tokens", model)),
      generation_tokens_(counter(r, "tessera:generation_tokens_total", "Generated tokens", model)),
      preemptions_(counter(r, "tessera:num_preemptions_total", "Preemptions (recompute) of running requests", model)),
      cancelled_(counter(r, "tessera:requests_cancelled_total", "Requests cancelled by their client", model)),
      accepted_(counter(r, "tessera:requests_accepted_total", "Requests (one per choice) admitted to the scheduler", model)),
      draft_tokens_(counter(r, "tessera:spec_decode_num_draft_tokens_total", "Speculative draft tokens proposed", model)),
      accepted_draft_tokens_(
          counter(r, "tessera:spec_decode_num_accepted_tokens_total", "Speculative draft tokens accepted", model)) {}

void ModelMetrics::observe_finished(const std::string& reason, double e2e_seconds, int prompt_tokens, int generation_tokens) {
  counter(registry_, "tessera:request_success_total", "Finished requests by finish reason", model_, {{"finished_reason", reason}})
      .Increment();
  e2e_.Observe(e2e_seconds);
  prompt_tokens_.Increment(prompt_tokens);
  generation_tokens_.Increment(generation_tokens);
}

void ModelMetrics::count_rejected(const std::string& reason) {
  counter(registry_, "tessera:requests_rejected_total", "Requests refused at admission by reason", model_, {{"reason", reason}})
      .Increment();
}

void ModelMetrics::refresh(const SchedulerStats& stats, const Backend& device) {
  std::lock_guard lock(refresh_mutex_);
  if (!device_used_) {
    const prometheus::Labels labels{{"model_name", model_}, {"device", device_name(device.device())}};
    device_used_ = &BuildGauge().Name("tessera:device_memory_used_bytes").Help("Memory in use on the model's device (all users)")
                        .Register(registry_).Add(labels);
    device_total_ = &BuildGauge().Name("tessera:device_memory_total_bytes").Help("Memory of the model's device")
                         .Register(registry_).Add(labels);
  }
  const MemoryInfo memory = device.memory_info();
  device_used_->Set(double(memory.total_bytes - std::min(memory.free_bytes, memory.total_bytes)));
  device_total_->Set(double(memory.total_bytes));
  running_.Set(stats.running);
  waiting_.Set(stats.waiting);
  kv_usage_.Set(stats.total_pages > 0 ? double(stats.total_pages - stats.free_pages) / stats.total_pages : 0.0);
  // The scheduler counts cumulatively; counters take the increase.
  auto advance = [](prometheus::Counter& counter, uint64_t now, uint64_t& seen) {
    if (now > seen) counter.Increment(double(now - seen));
    seen = std::max(seen, now);
  };
  advance(preemptions_, stats.preemptions, preemptions_seen_);
  advance(prefix_queries_, stats.prefix_queries, prefix_queries_seen_);
  advance(prefix_hits_, stats.prefix_hits, prefix_hits_seen_);
  advance(draft_tokens_, stats.draft_tokens, draft_tokens_seen_);
  advance(accepted_draft_tokens_, stats.accepted_tokens, accepted_draft_tokens_seen_);
}

void ModelMetrics::clear_gauges() {
  std::lock_guard lock(refresh_mutex_);
  running_.Set(0);
  waiting_.Set(0);
  kv_usage_.Set(0);
}

}  // namespace tessera
