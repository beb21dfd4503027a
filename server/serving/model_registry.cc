#include "server/serving/model_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
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

ModelHandle load_one(const ModelConfig& c, size_t index, prometheus::Registry& metrics, ParallelRanks* ranks,
                     const ModelLoop::FaultListener& on_fault) {
  // Weights run in their stored types (quantised GGUF blocks, f16/bf16/f32
  // safetensors); converting them at load is not offered.
  if (c.dtype != "auto") throw Error("model '" + c.name + "': dtype '" + c.dtype + "' is not supported; use auto (the file's own types)");
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<ModelRunner> runner = load_runner(c, index, ranks);
  auto m = std::make_shared<ServedModel>();
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
    std::vector<ModelHandle> loaded;
    for (size_t i = 0; i < models.size(); ++i) loaded.push_back(load_one(models[i], i, *metrics_, ranks, on_fault));
    {
      std::lock_guard lock(models_mutex_);
      models_ = std::move(loaded);
      parallel_ = ranks != nullptr;
      on_fault_ = on_fault;
    }
    state_ = ServingState::kReady;
    publish_health();
  } catch (...) {
    state_ = ServingState::kFailed;
    publish_health();
    throw;
  }
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
  const std::vector<ModelHandle> current = models();
  const auto current_named = [&current](const std::string& name) -> ModelHandle {
    for (const auto& m : current) {
      if (m->name() == name) return m;
    }
    return nullptr;
  };
  ReloadReport report;
  // Everything new or changed loads before anything is switched: a failure
  // leaves the served list as it was.
  std::vector<ModelHandle> next;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const ModelHandle same = current_named(wanted[i].name);
    if (same && same->config == wanted[i]) {
      next.push_back(same);
      report.kept.push_back(wanted[i].name);
      continue;
    }
    (same ? report.replaced : report.added).push_back(wanted[i].name);
    try {
      next.push_back(load_one(wanted[i], i, *metrics_, nullptr, on_fault_));
    } catch (const std::exception& e) {
      throw Error(std::string("reload: ") + e.what());
    }
  }
  std::vector<ModelHandle> retired;
  for (const auto& m : current) {
    if (std::find(next.begin(), next.end(), m) != next.end()) continue;
    retired.push_back(m);
    if (std::find(report.replaced.begin(), report.replaced.end(), m->name()) == report.replaced.end()) {
      report.removed.push_back(m->name());
    }
  }
  {
    std::lock_guard lock(models_mutex_);
    // A drain that began while the new models loaded wins: they are dropped.
    if (state_.load() != ServingState::kReady) throw Error("reload: the server began to " + state_name() + " meanwhile");
    models_ = std::move(next);
    retiring_.insert(retiring_.end(), retired.begin(), retired.end());
  }
  publish_health();
  std::vector<std::thread> drains;
  for (const auto& m : retired) {
    drains.emplace_back([&m, drain_timeout] { m->loop->drain(drain_timeout, "model '" + m->name() + "' was unloaded by a config reload"); });
  }
  for (auto& t : drains) t.join();
  {
    std::lock_guard lock(models_mutex_);
    std::erase_if(retiring_, [&](const ModelHandle& m) { return std::find(retired.begin(), retired.end(), m) != retired.end(); });
  }
  // A removed model's gauges would otherwise keep their last values (a
  // replaced one shares them with its successor).
  for (const auto& m : retired) {
    if (std::find(report.removed.begin(), report.removed.end(), m->name()) != report.removed.end()) m->metrics->clear_gauges();
  }
  return report;
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
  for (const auto* list : {&models_, &retiring_}) {
    for (const auto& m : *list) {
      if (m->name() == name) return m;
    }
  }
  return nullptr;
}

std::vector<ModelHandle> ModelRegistry::models() const {
  std::lock_guard lock(models_mutex_);
  return models_;
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
