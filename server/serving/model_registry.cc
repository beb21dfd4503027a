#include "server/serving/model_registry.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "engine/error.h"
#include "quant/schemes.h"
#include "server/serving/api_error.h"
#include "kernels/backend_registry.h"

namespace tessera {
namespace {

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

std::unique_ptr<ServedModel> load_one(const ModelConfig& c, prometheus::Registry& metrics) {
  // Weights run in their stored types (quantised GGUF blocks, f16/bf16/f32
  // safetensors); converting them at load is not offered.
  if (c.dtype != "auto") throw Error("model '" + c.name + "': dtype '" + c.dtype + "' is not supported; use auto (the file's own types)");
  const auto t0 = std::chrono::steady_clock::now();
  RunnerConfig rc;
  rc.kv_budget_bytes = uint64_t(c.kv_cache.budget_mb) << 20;
  rc.kv_memory_fraction = c.kv_cache.memory_fraction;
  rc.page_size = c.kv_cache.page_size;
  rc.kv_dtype = kv_dtype_from_name(c.kv_cache.dtype);
  rc.capacity.max_tokens = c.scheduler.max_batch_tokens;
  rc.capacity.max_seqs = c.scheduler.max_sequences;
  if (!c.quantization.scheme.empty()) rc.load.quantize = quant::scheme_choice(c.quantization.scheme, c.quantization.group_size);
  std::shared_ptr<Backend> backend;
  try {
    backend = create_backend(parse_device(c.device), BackendOptions{c.threads});
  } catch (const Error& e) {
    throw Error("model '" + c.name + "': " + e.what());
  }
  auto runner = std::make_unique<ModelRunner>(std::move(backend), expand_home(c.path), rc);

  auto m = std::make_unique<ServedModel>();
  m->config = c;
  const int context = runner->model().spec().max_context;
  m->max_model_len = c.max_model_len > 0 ? std::min(c.max_model_len, context) : context;
  const std::string template_source = c.chat_template ? *c.chat_template : runner->model().chat_template();
  if (!template_source.empty()) {
    try {
      m->chat_template.emplace(template_source);
      m->tool_format = tool_call_format_of(template_source);
    } catch (const std::exception& e) {
      throw Error("model '" + c.name + "': chat template: " + e.what());
    }
  }
  SchedulerLimits limits;
  static_cast<SchedulerConfig&>(limits) = c.scheduler;
  limits.max_model_len = m->max_model_len;
  m->loop = std::make_unique<ModelLoop>(std::move(runner), limits);
  m->created = std::time(nullptr);
  m->metrics = std::make_unique<ModelMetrics>(metrics, c.name);
  spdlog::info("model {} loaded from {} in {:.2f} s (max_model_len {}, {} KV pages of {}, chat template: {})", c.name,
               c.path, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), m->max_model_len,
               m->loop->runner().kv_cache().n_pages(), m->loop->runner().page_size(), m->chat_template ? "yes" : "none");
  return m;
}

}  // namespace

void ModelRegistry::require_serving() const {
  switch (state()) {
    case ServingState::kReady: return;
    case ServingState::kLoading: throw ApiError(503, "server_error", "models are still loading");
    case ServingState::kDraining: throw ApiError(503, "server_error", "the server is shutting down");
    case ServingState::kFailed: throw ApiError(503, "server_error", "the models failed to load");
  }
}

void ModelRegistry::load(const std::vector<ModelConfig>& models) {
  try {
    std::vector<std::unique_ptr<ServedModel>> loaded;
    for (const ModelConfig& c : models) loaded.push_back(load_one(c, *metrics_));
    models_ = std::move(loaded);
    state_ = ServingState::kReady;
    publish_health();
  } catch (...) {
    state_ = ServingState::kFailed;
    publish_health();
    throw;
  }
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

ServedModel* ModelRegistry::find(const std::string& name) const {
  if (state_.load() == ServingState::kLoading || state_.load() == ServingState::kFailed) return nullptr;
  for (const auto& m : models_) {
    if (m->name() == name) return m.get();
  }
  return nullptr;
}

bool ModelRegistry::healthy() const {
  if (state_.load() != ServingState::kReady) return false;
  for (const auto& m : models_) {
    if (m->loop->state() != LoopState::kReady) return false;
  }
  return true;
}

std::string ModelRegistry::state_name() const {
  switch (state_.load()) {
    case ServingState::kLoading: return "loading";
    case ServingState::kReady:
      for (const auto& m : models_) {
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
  std::vector<std::thread> drains;
  for (const auto& m : models_) drains.emplace_back([&m, timeout] { m->loop->drain(timeout); });
  for (auto& t : drains) t.join();
}

void ModelRegistry::refresh_metrics() const {
  if (state_.load() == ServingState::kLoading) return;
  for (const auto& m : models_) m->metrics->refresh(m->loop->stats(), m->loop->runner().backend());
}

}  // namespace tessera
