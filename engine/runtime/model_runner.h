#pragma once
// Runs StepPlans on a backend: keeps each sequence's state between steps
// (sampling parameters, random generator, tokens, page table), fills the
// fixed batch buffers, runs the decoder, and samples each row with its own
// parameters.
#include <chrono>
#include <memory>
#include <random>
#include <unordered_map>

#include "engine/runtime/batch_buffers.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/parallel/context_steps.h"
#include "engine/runtime/step_plan.h"
#include "engine/runtime/step_recordings.h"
#include "kernels/backend.h"
#include "models/decoder.h"
#include "models/model.h"

namespace tessera {

struct RunnerConfig {
  uint64_t kv_budget_bytes = 256ull << 20;
  // When above 0: the KV cache is sized so that the device's memory in use,
  // once the model is loaded, is this fraction of its total; replaces
  // kv_budget_bytes.
  double kv_memory_fraction = 0.0;
  // When above 0: exactly this many pages, whatever the budget (a draft
  // model's cache holds as many tokens as its served model's).
  int64_t kv_pages = 0;
  int page_size = 16;
  DType kv_dtype = DType::kF16;
  DecoderCapacity capacity;  // the largest step: tokens and sequences
  ModelLoadOptions load;
  // A group of ranks with whole weights is context-parallel: a step of at
  // least this many tokens (a long prefill) is divided among the ranks.
  int context_min_tokens = 256;
};

class ModelRunner {
 public:
  // Loads the model at `model_path` onto `backend`. Throws tessera::Error.
  // With config.load.tensor_rank over several ranks, `comm` is that group
  // (outliving the runner); rank 0 samples, the others follow its plans.
  // A `comm` of several ranks with whole weights makes a context-parallel
  // group (engine/runtime/parallel/context_steps.h).
  ModelRunner(std::shared_ptr<Backend> backend, const std::string& model_path, const RunnerConfig& config,
              Communicator* comm = nullptr);
  ~ModelRunner();

  const Model& model() const { return *model_; }
  Backend& backend() const { return *backend_; }
  const std::shared_ptr<Backend>& shared_backend() const { return backend_; }
  const PagedKvCache& kv_cache() const { return *kv_; }
  int page_size() const { return kv_->layout().page_size; }
  const DecoderCapacity& capacity() const { return decoder_->capacity(); }
  size_t known_sequences() const { return sequences_.size(); }

  // Throws tessera::Error when the plan is malformed (ids, pages, positions).
  StepResult step(const StepPlan& plan);
  // A tensor-parallel rank other than 0: runs the forward pass of a plan
  // rank 0 has already checked and will sample; returns nothing.
  void follow(const StepPlan& plan);
  // Rank 0 of a group while it has no work: shows every rank is alive
  // (throws CollectiveError when one is not). Call no more often than
  // heartbeat_interval().
  void heartbeat();
  std::chrono::milliseconds heartbeat_interval() const {
    return parallel() ? comm_->timeout() / 3 : std::chrono::milliseconds::max();
  }
  bool parallel() const { return comm_ && comm_->world() > 1; }
  bool context_parallel() const { return context_ != nullptr; }
  // The group this runner is a rank of; null for one rank.
  Communicator* communicator() const { return comm_; }
  // Rank 0: tells the followers no more plans come.
  void release_followers();
  void set_observer(ActivationObserver observer) { decoder_->set_observer(std::move(observer)); }
  void set_profile(OpProfile* profile) { decoder_->set_profile(profile); }

 private:
  struct SequenceState {
    std::vector<int32_t> tokens;  // prompt, then output
    size_t prompt_len = 0;
    SamplingParams sampling;
    std::mt19937_64 rng;
    std::vector<int32_t> pages;
    std::unique_ptr<grammar::GrammarMatcher> matcher;  // when the output is constrained
    std::string grammar_error;                         // the grammar failed while the sequence resumed
  };

  int64_t agreed_pages(int64_t local_pages);
  void check_tokens(uint64_t seq_id, const std::vector<int32_t>& tokens) const;
  void register_sequences(const StepPlan& plan);
  void apply_steps(const StepPlan& plan, bool follower);
  // Fills the batch and runs the forward pass; returns the logit rows.
  int run_forward(const StepPlan& plan, bool copy_logits);
  std::vector<BatchSequence> batch_sequences(const StepPlan& plan);
  float* logits_for(int rows);
  float* hidden_for(int rows);  // null for none
  StepResult sample(const StepPlan& plan, int n_logit_rows);
  // Draws after each token of a step with draft tokens, accepting proposals
  // until a draw differs from one; the logits of the step start at `first_row`.
  void verify_draft(const SequenceStep& s, size_t first_row, SequenceResult& r);
  // Draws from logits row `row` for the sequence and follows its grammar;
  // a grammar failure is the sequence's error, not the step's.
  bool draw(SequenceState& state, size_t row, SampledToken& token, std::string& error);
  // The sequence's matcher, advanced over any output it already has.
  void start_grammar(uint64_t seq_id, SequenceState& state);

  std::shared_ptr<Backend> backend_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PagedKvCache> kv_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<BatchBuffers> batch_;
  std::unique_ptr<ContextSteps> context_;
  StepRecordings recordings_;
  const float* recorded_logits_ = nullptr;  // where the recordings write their logits
  std::unordered_map<uint64_t, SequenceState> sequences_;
  DeviceBuffer logits_;           // (rows, vocab) on the device
  std::vector<float> host_logits_;   // (rows, vocab) copied back for sampling
  DeviceBuffer hidden_;              // (rows, d_model) final hidden states on the device
  std::vector<float> host_hidden_;   // (rows, d_model) copied back for pooling
  std::vector<float> sample_scratch_;  // (vocab): one row, modified by the sampler
  grammar::GrammarCache grammars_;
};

}  // namespace tessera
