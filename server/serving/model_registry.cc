#include "server/serving/model_registry.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "engine/core/error.h"
#include "engine/runtime/tokenizer_texts.h"
#include "server/serving/api_error.h"
#include "models/model.h"
#include "server/serving/model_fingerprint.h"
#include "server/serving/runner_setup.h"

namespace tessera {
namespace {

// The config's values over the model's own recommendation, each value the
// model's files held but could not be used said once in the log.
SamplingDefaults sampling_defaults_for(const ModelConfig& c, const Model& model) {
  const ModelSamplingDefaults& from_files = model.sampling_defaults();
  for (const std::string& why : from_files.dropped) spdlog::warn("model {}: sampling recommendation left out: {}", c.name, why);
  const SamplingDefaults base = c.sampling_defaults_from_model ? from_files.values : SamplingDefaults{};
  const SamplingDefaults out = base.overridden_by(c.sampling_defaults);
  spdlog::info("model {}: sampling defaults: {}{}", c.name, out.describe(),
               c.sampling_defaults_from_model && !from_files.values.empty() ? " (model's recommendation: " + from_files.values.describe() + ")" : "");
  return out;
}

std::unique_ptr<ServedModel> load_one(const ModelConfig& c, size_t index, prometheus::Registry& metrics, ParallelRanks* ranks,
                                      const ModelLoop::FaultListener& on_fault) {
  // Weights run in their stored types (quantised GGUF blocks, f16/bf16/f32
  // safetensors); converting them at load is not offered.
  if (c.dtype != "auto") throw Error("model '" + c.name + "': dtype '" + c.dtype + "' is not supported; use auto (the file's own types)");
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<ModelRunner> runner = load_runner(c, index, ranks);
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
  m->reasoning = reasoning_format_of(c.reasoning_parser, template_source);
  m->sampling_defaults = sampling_defaults_for(c, runner->model());
  SchedulerLimits limits;
  static_cast<SchedulerConfig&>(limits) = c.scheduler;
  limits.max_model_len = m->max_model_len;
  ModelLoop::FaultListener named;
  if (on_fault) named = [on_fault, name = c.name](const std::string& what) { on_fault("model " + name + ": " + what); };
  std::unique_ptr<DraftModel> draft;
  if (c.scheduler.speculative.uses_draft_model()) {
    draft = load_draft_model(c, *runner);
    spdlog::info("model {}: speculative proposals from the draft model {} ({} KV pages)", c.name,
                 c.scheduler.speculative.draft_model, draft->runner().kv_cache().n_pages());
  }
  m->grammars = std::make_unique<GrammarCompiler>(
      [model = &runner->model()] { return grammar::tokenizer_texts(model->tokenizer(), size_t(model->spec().vocab_size)); },
      c.structured_output);
  m->text_tokenizer = &runner->model().tokenizer();
  m->hidden_size = runner->model().spec().d_model;
  m->loop = std::make_unique<ModelLoop>(std::move(runner), limits, std::move(named), std::move(draft));
  m->created = std::time(nullptr);
  m->fingerprint = model_fingerprint(c, template_source);
  m->metrics = std::make_unique<ModelMetrics>(metrics, c.name);
  spdlog::info("model {} loaded from {} on {} in {:.2f} s (max_model_len {}, {} KV pages of {}, chat template: {})", c.name,
               c.path, c.device, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), m->max_model_len,
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

void ModelRegistry::load(const std::vector<ModelConfig>& models, ParallelRanks* ranks, const ModelLoop::FaultListener& on_fault) {
  try {
    std::vector<std::unique_ptr<ServedModel>> loaded;
    for (size_t i = 0; i < models.size(); ++i) loaded.push_back(load_one(models[i], i, *metrics_, ranks, on_fault));
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
