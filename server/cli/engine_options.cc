#include "server/cli/engine_options.h"

#include <CLI/CLI.hpp>

#include "kernels/backend_registry.h"
#include "quant/schemes.h"

namespace tessera::cli {

void add_engine_options(CLI::App* cmd, EngineOptions* o) {
  cmd->add_option("--model,-m", o->model, "GGUF file or Hugging Face model directory")->required();
  cmd->add_option("--device", o->device, "Device to run on (" + device_forms() + ")")->capture_default_str();
  cmd->add_option("--threads,-t", o->threads, "CPU threads (0: all)")->check(CLI::Range(0, 1024))->capture_default_str();
  auto* budget = cmd->add_option("--kv-budget-mb", o->kv_budget_mb, "KV cache memory")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--kv-memory-fraction", o->kv_memory_fraction,
                  "Size the KV cache so the device's memory in use is this fraction of its total")
      ->check(CLI::Range(0.01, 1.0))
      ->excludes(budget);
  cmd->add_option("--page-size", o->page_size, "Tokens per KV page")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--kv-dtype", o->kv_dtype, "KV cache element type")->check(CLI::IsMember({"f16", "f32", "int8"}))->capture_default_str();
  cmd->add_option("--quantize", o->quantize, "Quantize the linear weights as they load (a16w8, a16w4, da8w8)")
      ->check(CLI::IsMember({"a16w8", "a16w4", "da8w8"}));
  cmd->add_option("--group-size", o->group_size, "a16w4 group size (32, 64, 128)")->check(CLI::IsMember({32, 64, 128}));
}

std::unique_ptr<ModelRunner> make_runner(const EngineOptions& o, int max_tokens) {
  RunnerConfig config;
  config.kv_budget_bytes = uint64_t(o.kv_budget_mb) << 20;
  config.kv_memory_fraction = o.kv_memory_fraction;
  config.page_size = o.page_size;
  config.kv_dtype = kv_dtype_from_name(o.kv_dtype);
  config.capacity.max_tokens = max_tokens;
  config.capacity.max_seqs = 1;
  if (!o.quantize.empty()) config.load.quantize = quant::scheme_choice(o.quantize, o.group_size);
  std::shared_ptr<Backend> backend = create_backend(parse_device(o.device), BackendOptions{o.threads});
  return std::make_unique<ModelRunner>(std::move(backend), o.model, config);
}

}  // namespace tessera::cli
