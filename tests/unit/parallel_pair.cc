#include "tests/unit/parallel_pair.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "engine/runtime/parallel/plan_broadcast.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "scheduler/page_allocator.h"

namespace tessera::test {

std::shared_ptr<Backend> one_cpu_thread() {
  return std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 1, .isa = std::nullopt});
}

ParallelPair::ParallelPair(const std::string& path, const std::function<RunnerConfig(int rank)>& config_of) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-pair-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  CommunicatorOptions options;
  options.world = 2;
  options.rendezvous = "file:" + dir.string();
  const RunnerConfig follower_config = config_of(1);
  follower_ = std::thread([this, path, options, follower_config]() mutable {
    try {
      options.rank = 1;
      auto backend = one_cpu_thread();
      auto comm = backend->create_communicator(options);
      ModelRunner runner(backend, path, follower_config, comm.get());
      while (auto plan = receive_plan(*comm, backend->default_stream())) runner.follow(*plan);
    } catch (const std::exception& e) {
      follower_error_ = e.what();
    }
  });
  // A model that cannot be split fails on both ranks alike: the follower
  // ends, and is joined before the error reaches the test.
  try {
    backend_ = one_cpu_thread();
    options.rank = 0;
    comm_ = backend_->create_communicator(options);
    runner_ = std::make_unique<ModelRunner>(backend_, path, config_of(0), comm_.get());
  } catch (...) {
    comm_.reset();
    follower_.join();
    throw;
  }
}

ParallelPair::~ParallelPair() {
  try {
    broadcast_stop(*comm_, backend_->default_stream());
  } catch (...) {
  }
  follower_.join();
}

Generation ParallelPair::generate(const std::vector<std::vector<int32_t>>& prompts, int n_tokens, uint64_t first_id,
                                  size_t chunk) {
  try {
    return test::generate(*runner_, prompts, n_tokens, first_id, chunk);
  } catch (const std::exception& e) {
    // Rank 1 fails on its own thread; give it a moment to record why.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    throw std::runtime_error(std::string(e.what()) + "; rank 1: " + follower_error_);
  }
}

namespace {

// The next step of prompt i: its next chunk, or (once the prompt is in) the
// last token drawn.
SequenceStep next_step(const std::vector<int32_t>& prompt, const std::vector<int32_t>& drawn, size_t done, size_t chunk) {
  SequenceStep s;
  s.start_position = int32_t(done);
  if (done < prompt.size()) {
    const size_t n = std::min(chunk, prompt.size() - done);
    s.tokens.assign(prompt.begin() + long(done), prompt.begin() + long(done + n));
    s.all_logits = true;
    s.sample = done + n == prompt.size();
  } else {
    s.tokens = {drawn.back()};
    s.sample = true;
  }
  return s;
}

}  // namespace

Generation generate(ModelRunner& runner, const std::vector<std::vector<int32_t>>& prompts, int n_tokens, uint64_t first_id,
                    size_t chunk) {
  PageAllocator allocator(int32_t(runner.kv_cache().n_pages()));
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Generation g;
  g.prompt_logits.resize(prompts.size());
  g.tokens.resize(prompts.size());
  std::vector<std::vector<int32_t>> pages(prompts.size());
  std::vector<size_t> done(prompts.size(), 0);
  StepPlan plan;
  for (size_t i = 0; i < prompts.size(); ++i) plan.new_sequences.push_back({first_id + i, prompts[i], uint32_t(prompts[i].size()), greedy, 0});
  auto finished = [&](size_t i) { return g.tokens[i].size() >= size_t(n_tokens) + 1; };
  while (true) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (finished(i)) continue;
      SequenceStep s = next_step(prompts[i], g.tokens[i], done[i], chunk);
      s.seq_id = first_id + i;
      s.pages_from = uint32_t(pages[i].size());
      while (pages[i].size() * size_t(runner.page_size()) < done[i] + s.tokens.size()) pages[i].push_back(*allocator.allocate());
      s.pages.assign(pages[i].begin() + s.pages_from, pages[i].end());
      done[i] += s.tokens.size();
      plan.steps.push_back(std::move(s));
    }
    if (plan.steps.empty()) break;
    const StepResult result = runner.step(plan);
    for (size_t k = 0; k < plan.steps.size(); ++k) {
      const size_t i = size_t(plan.steps[k].seq_id - first_id);
      const SequenceResult& r = result.sequences[k];
      g.prompt_logits[i].insert(g.prompt_logits[i].end(), r.logits.begin(), r.logits.end());
      if (r.sampled) g.tokens[i].push_back(r.token.id);
    }
    plan = StepPlan{};
  }
  return g;
}

const std::vector<std::string>& short_prompts() {
  static const std::vector<std::string> prompts = {"The capital of France is",
                                                   "def fibonacci(n):",
                                                   "Once upon a time, in a small village,",
                                                   "Water boils at a temperature of",
                                                   "List three primary colors:",
                                                   "The quick brown fox",
                                                   "In machine learning, a neural network is",
                                                   "SELECT name FROM users WHERE",
                                                   "My favourite season is autumn because",
                                                   "The sum of 17 and 25 is"};
  return prompts;
}

}  // namespace tessera::test
