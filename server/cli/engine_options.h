#pragma once
// Flags shared by the commands that run a model.
#include <memory>
#include <string>

#include "engine/runtime/model_runner.h"

namespace CLI {
class App;
}

namespace tessera::cli {

struct EngineOptions {
  std::string model;
  std::string device = "cpu";
  int threads = 0;
  int kv_budget_mb = 256;
  double kv_memory_fraction = 0.0;  // above 0: replaces kv_budget_mb (see RunnerConfig)
  int page_size = 16;
  std::string kv_dtype = "f16";
  std::string quantize;  // scheme to quantize the linears to as they load; empty: none
  int group_size = 0;
};

void add_engine_options(CLI::App* cmd, EngineOptions* o);
// Tokens per forward pass the commands lay their buffers out for at most.
constexpr int kMaxCliBatch = 4096;

// A runner whose steps hold up to `max_tokens` tokens.
std::unique_ptr<ModelRunner> make_runner(const EngineOptions& o, int max_tokens = 2048);

}  // namespace tessera::cli
