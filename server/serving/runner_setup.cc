#include "server/serving/runner_setup.h"

#include <cstdlib>

#include "engine/core/error.h"
#include "kernels/backend_registry.h"
#include "kernels/cpu/runtime/isa.h"
#include "quant/schemes.h"

namespace tessera {
namespace {

RunnerConfig runner_config_of(const ModelConfig& c) {
  RunnerConfig rc;
  rc.kv_budget_bytes = uint64_t(c.kv_cache.budget_mb) << 20;
  rc.kv_memory_fraction = c.kv_cache.memory_fraction;
  rc.page_size = c.kv_cache.page_size;
  rc.kv_dtype = kv_dtype_from_name(c.kv_cache.dtype);
  rc.capacity.max_tokens = c.scheduler.max_batch_tokens;
  rc.capacity.max_seqs = c.scheduler.max_sequences;
  if (!c.quantization.scheme.empty()) rc.load.quantize = quant::scheme_choice(c.quantization.scheme, c.quantization.group_size);
  return rc;
}

std::shared_ptr<Backend> backend_of(const ModelConfig& c) {
  try {
    return create_backend(parse_device(c.device), BackendOptions{c.threads});
  } catch (const Error& e) {
    throw Error("model '" + c.name + "': " + e.what());
  }
}

}  // namespace

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

std::unique_ptr<ModelRunner> load_runner(const ModelConfig& c, size_t index, ParallelRanks* ranks,
                                         std::shared_ptr<const ArtifactCache> cache) {
  RunnerConfig rc = runner_config_of(c);
  if (cache) {
    rc.load.cache = std::move(cache);
    rc.load.cache_isa = cpu::detect_isa().best_level();
  }
  std::shared_ptr<Backend> backend = backend_of(c);
  Communicator* comm = nullptr;
  if (ranks) {
    rc.load.tensor_rank = ranks->tensor_rank();
    rc.context_min_tokens = ranks->config().parallel.context_min_tokens;
    comm = ranks->join(index, *backend, c.name);
  }
  return std::make_unique<ModelRunner>(std::move(backend), expand_home(c.path), rc, comm);
}

std::unique_ptr<DraftModel> load_draft_model(const ModelConfig& c, const ModelRunner& target) {
  RunnerConfig rc = runner_config_of(c);
  rc.load = ModelLoadOptions{};  // the draft runs as stored, whole on this process
  rc.kv_memory_fraction = 0.0;
  rc.kv_pages = target.kv_cache().n_pages();
  try {
    auto draft = std::make_unique<ModelRunner>(target.shared_backend(), expand_home(c.scheduler.speculative.draft_model), rc);
    return std::make_unique<DraftModel>(std::move(draft), target.model());
  } catch (const Error& e) {
    throw Error("model '" + c.name + "': " + e.what());
  }
}

}  // namespace tessera
