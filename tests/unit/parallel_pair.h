#pragma once
// Two ranks of a parallel group in one process: rank 0 in the caller's
// thread, rank 1 following its plans in another, one CPU thread each,
// meeting through gloo; and a greedy generation to compare them with one
// rank.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/model_runner.h"

namespace tessera::test {

std::shared_ptr<Backend> one_cpu_thread();

struct Generation {
  std::vector<std::vector<float>> prompt_logits;  // per prompt: (prompt tokens, vocab)
  std::vector<std::vector<int32_t>> tokens;       // per prompt: greedy output
};

class ParallelPair {
 public:
  // `config_of(rank)` is each rank's runner configuration.
  ParallelPair(const std::string& path, const std::function<RunnerConfig(int rank)>& config_of);
  ~ParallelPair();
  ModelRunner& runner() { return *runner_; }
  const std::string& follower_error() const { return follower_error_; }
  // generate() on rank 0; a failure names rank 1's error too.
  Generation generate(const std::vector<std::vector<int32_t>>& prompts, int n_tokens, uint64_t first_id,
                      size_t chunk = SIZE_MAX);

 private:
  std::thread follower_;
  std::string follower_error_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<ModelRunner> runner_;
};

// All prompts in one batch: the prompt step with every row's logits (in
// steps of at most `chunk` tokens, the last sampled), then `n_tokens`
// greedy steps.
Generation generate(ModelRunner& runner, const std::vector<std::vector<int32_t>>& prompts, int n_tokens, uint64_t first_id,
                    size_t chunk = SIZE_MAX);

// Ten short prompts of different kinds.
const std::vector<std::string>& short_prompts();

}  // namespace tessera::test
