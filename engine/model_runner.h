#pragma once
// Runs StepPlans on the CPU: builds the batch metadata (flattened tokens,
// positions, slots, CSR page table), runs the decoder, and samples each row
// with its own parameters.
#include <memory>

#include "engine/kv_cache.h"
#include "engine/step_plan.h"
#include "kernels/cpu/thread_pool.h"
#include "models/decoder.h"
#include "models/model.h"

namespace tessera {

struct RunnerConfig {
  uint64_t kv_budget_bytes = 256ull << 20;
  int page_size = 16;
  DType kv_dtype = DType::kF16;
  int n_threads = 0;  // 0: one per hardware thread
};

class ModelRunner {
 public:
  ModelRunner(std::unique_ptr<Model> model, const RunnerConfig& config);

  const Model& model() const { return *model_; }
  const PagedKvCache& kv_cache() const { return *kv_; }
  int page_size() const { return kv_->layout().page_size; }

  // Throws tessera::Error when the plan is malformed (ids, pages, positions).
  StepResult step(const StepPlan& plan);
  void set_observer(ActivationObserver observer) { decoder_.set_observer(std::move(observer)); }

 private:
  void validate(const StepPlan& plan) const;

  std::unique_ptr<Model> model_;
  std::unique_ptr<PagedKvCache> kv_;
  cpu::ThreadPool pool_;
  Decoder decoder_;
  std::vector<float> logits_;
};

}  // namespace tessera
