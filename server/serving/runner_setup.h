#pragma once
// A configured model's runner, built the same way on the serving process
// and on every worker rank.
#include <memory>

#include "config/config.h"
#include "engine/runtime/model_runner.h"
#include "scheduler/draft_model.h"
#include "server/parallel/parallel_ranks.h"

namespace tessera {

// Loads model `index` of the configuration: alone, or, with `ranks`, as
// this process's rank of that model's group (joined first; the runner's
// communicator() is it). Throws tessera::Error naming the model.
// With `cache`, weights quantized at load are read from it when an earlier
// start stored them, and stored there otherwise.
std::unique_ptr<ModelRunner> load_runner(const ModelConfig& model, size_t index, ParallelRanks* ranks,
                                         std::shared_ptr<const ArtifactCache> cache = nullptr);

// `path` with a leading "~/" under $HOME.
std::string expand_home(const std::string& path);

// The draft model of `model`'s speculative decoding (method draft_model):
// on the served model's backend and threads, with a cache of as many pages
// as `target`'s. Throws tessera::Error naming the model.
std::unique_ptr<DraftModel> load_draft_model(const ModelConfig& model, const ModelRunner& target);

}  // namespace tessera
