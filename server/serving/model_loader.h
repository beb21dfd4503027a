#pragma once
// Loading one configured model for serving, and the memory it is counted
// for against the daemon's budget (server.memory_budget_mb).
#include <cstdint>

#include "config/config.h"
#include "scheduler/model_loop.h"
#include "server/parallel/parallel_ranks.h"
#include "server/serving/served_model.h"

namespace tessera {

// Loads model `index` of the configuration and starts its loop; with
// `ranks`, as rank 0 of its parallel group. `on_fault` hears of an engine
// fault. Throws tessera::Error naming the model. Its footprint_bytes is the
// larger of the estimate below and the growth of the process's resident
// memory while it loaded (so loads are best made one at a time).
// With `cache`, weights quantized at load come from (and go to) it.
std::shared_ptr<ServedModel> load_served_model(const ModelConfig& config, size_t index, prometheus::Registry& metrics,
                                               ParallelRanks* ranks, const ModelLoop::FaultListener& on_fault,
                                               std::shared_ptr<const ArtifactCache> cache = nullptr);

// What a model will hold, known before it loads: its checkpoint files (a
// copy more of the quantized part when it is quantized at load, since the
// checkpoint stays mapped), a draft model's file, the KV cache budget, and
// an allowance for activations. Errs on the high side.
uint64_t estimated_footprint_bytes(const ModelConfig& config);

// The bytes of a GGUF file, or of the safetensors files in a Hugging Face
// directory; 0 when the path holds neither.
uint64_t checkpoint_bytes(const std::string& path);

// This process's resident set, in bytes (0 where it cannot be read).
uint64_t process_resident_bytes();

}  // namespace tessera
