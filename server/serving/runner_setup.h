#pragma once
// A configured model's runner, built the same way on the serving process
// and on every worker rank.
#include <memory>

#include "config/config.h"
#include "engine/model_runner.h"
#include "server/parallel/parallel_ranks.h"

namespace tessera {

// Loads model `index` of the configuration: alone, or, with `ranks`, as
// this process's rank of that model's group (joined first; the runner's
// communicator() is it). Throws tessera::Error naming the model.
std::unique_ptr<ModelRunner> load_runner(const ModelConfig& model, size_t index, ParallelRanks* ranks);

}  // namespace tessera
