#include "server/serving/model_loader.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/runtime/tokenizer_texts.h"
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

// Activation buffers, logits rows and the loop's own state: measured at
// 10-40 MiB for the models in tests/; the estimate keeps a margin.
constexpr uint64_t kActivationAllowanceBytes = uint64_t(64) << 20;

// The weights' share of their checkpoint bytes once quantized to `scheme`
// (8 or 4 bits and a scale per group, from 16-bit weights), rounded up.
double quantized_fraction(const std::string& scheme) {
  if (scheme.empty()) return 0.0;
  return scheme == "a16w4" ? 0.3 : 0.55;
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

}  // namespace

uint64_t checkpoint_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  if (!fs::is_directory(path, ec)) return 0;
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".safetensors" && entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

uint64_t estimated_footprint_bytes(const ModelConfig& c) {
  const uint64_t weights = checkpoint_bytes(expand_home(c.path));
  uint64_t total = weights + uint64_t(double(weights) * quantized_fraction(c.quantization.scheme));
  if (c.scheduler.speculative.uses_draft_model()) total += checkpoint_bytes(expand_home(c.scheduler.speculative.draft_model));
  total += c.kv_cache.memory_fraction > 0.0 ? uint64_t(c.kv_cache.memory_fraction * double(physical_memory_bytes()))
                                            : uint64_t(c.kv_cache.budget_mb) << 20;
  return total + kActivationAllowanceBytes;
}

uint64_t process_resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * uint64_t(sysconf(_SC_PAGE_SIZE));
}

std::shared_ptr<ServedModel> load_served_model(const ModelConfig& c, size_t index, prometheus::Registry& metrics,
                                               ParallelRanks* ranks, const ModelLoop::FaultListener& on_fault,
                                               std::shared_ptr<const ArtifactCache> cache) {
  // Weights run in their stored types (quantised GGUF blocks, f16/bf16/f32
  // safetensors); converting them at load is not offered.
  if (c.dtype != "auto") throw Error("model '" + c.name + "': dtype '" + c.dtype + "' is not supported; use auto (the file's own types)");
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t resident_before = process_resident_bytes();
  std::unique_ptr<ModelRunner> runner = load_runner(c, index, ranks, cache);
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
      c.structured_output, cache);
  m->text_tokenizer = &runner->model().tokenizer();
  m->hidden_size = runner->model().spec().d_model;
  m->loop = std::make_unique<ModelLoop>(std::move(runner), limits, std::move(named), std::move(draft));
  m->created = std::time(nullptr);
  m->fingerprint = model_fingerprint(c, template_source);
  m->metrics = std::make_unique<ModelMetrics>(metrics, c.name);
  if (const DecoderWeights& w = m->loop->runner().model().weights(); w.cached_linears + w.quantized_linears > 0) {
    spdlog::info("model {}: {} linears quantized at load, {} read from the artifact cache", c.name, w.quantized_linears,
                 w.cached_linears);
  }
  const uint64_t resident_after = process_resident_bytes();
  m->footprint_bytes = std::max(estimated_footprint_bytes(c), resident_after > resident_before ? resident_after - resident_before : 0);
  spdlog::info("model {} loaded from {} on {} in {:.2f} s (max_model_len {}, {} KV pages of {}, chat template: {}, {} MiB counted)",
               c.name, c.path, c.device, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               m->max_model_len, m->loop->runner().kv_cache().n_pages(), m->loop->runner().page_size(),
               m->chat_template ? "yes" : "none", m->footprint_bytes >> 20);
  return m;
}

}  // namespace tessera
