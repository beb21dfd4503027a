#pragma once
// What a configured model runs with: its backend and its runner settings,
// the same on the serving process and on every worker rank.
#include <memory>

#include "config/config.h"
#include "engine/model_runner.h"

namespace tessera {

RunnerConfig runner_config_of(const ModelConfig& model);
// Throws tessera::Error naming the model.
std::shared_ptr<Backend> backend_of(const ModelConfig& model);
// "~/x" under $HOME.
std::string expand_home(const std::string& path);

}  // namespace tessera
