#pragma once
// Flags shared by the commands that run a model.
#include <string>

#include "engine/model_runner.h"

namespace CLI {
class App;
}

namespace tessera::cli {

struct EngineOptions {
  std::string model;
  int threads = 0;
  int kv_budget_mb = 256;
  int page_size = 16;
  std::string kv_dtype = "f16";
};

void add_engine_options(CLI::App* cmd, EngineOptions* o);
ModelRunner make_runner(const EngineOptions& o);

}  // namespace tessera::cli
