#pragma once
// Speculative proposals from a draft model: a smaller model with the served
// model's tokenizer runs ahead of each decoding sequence, greedily, and its
// tokens become the sequence's draft, which the served model verifies in one
// forward pass (engine/runtime/step_plan.h). The draft keeps a KV cache of its own.
// After a verification it keeps the keys and values of the tokens the
// served model accepted and computes the draft's again from the first token
// that differs, so each step costs the draft one pass over the new tokens
// plus one pass for each proposal after the first.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/runtime/model_runner.h"
#include "scheduler/page_allocator.h"
#include "scheduler/scheduler.h"

namespace tessera {

class DraftModel {
 public:
  // Throws tessera::Error when the draft's tokenizer is not the one of
  // `target` (a proposal must mean the same text to both).
  DraftModel(std::unique_ptr<ModelRunner> draft, const Model& target);
  ~DraftModel();
  DraftModel(const DraftModel&) = delete;
  DraftModel& operator=(const DraftModel&) = delete;

  // Forgets the plan's finished sequences, then appends to the step of each
  // job up to `job.room` proposals, marked as the step's draft. A sequence
  // the draft's cache cannot hold gets none.
  void propose(StepPlan& plan, std::span<const DraftJob> jobs);

  const ModelRunner& runner() const { return *runner_; }
  // Sequences whose tokens the draft's cache holds.
  size_t known_sequences() const { return mirrors_.size(); }

 private:
  // What the draft runner holds for one served sequence.
  struct Mirror {
    std::vector<int32_t> tokens;  // as the draft runner has them: the sequence, then its last proposals
    size_t computed = 0;          // leading tokens whose keys and values are in the draft's cache
    size_t synced = 0;            // leading tokens known to agree with the served sequence
    std::vector<int32_t> pages;
    size_t pages_sent = 0;        // leading entries of `pages` the draft runner has
  };
  // One job in flight.
  struct Drafting {
    const DraftJob* job = nullptr;
    Mirror* mirror = nullptr;
    int room = 0;
    std::vector<int32_t> proposals;
    bool done = false;  // proposed an end of generation, or a token the served model lacks
  };

  // Cuts the mirror of `job` to the longest prefix whose keys the draft's
  // cache holds for the sequence, registering the sequence with the draft
  // runner again in `plan` when the runner's tokens stop agreeing with it.
  Drafting prepare(const DraftJob& job, int room, StepPlan& plan);
  bool ensure_pages(Mirror& m, size_t positions, std::span<const DraftJob> jobs, StepPlan& plan);
  void forget(uint64_t seq_id, StepPlan& plan);
  // Runs the jobs' new tokens through the draft in one pass of at most its
  // capacity, which draws each job's first proposal. A job whose tokens do
  // not all fit (a long prompt) goes on at the next step and proposes
  // nothing in this one, so no step waits for a whole prompt's prefill.
  void catch_up(StepPlan plan, std::vector<Drafting>& drafting);
  // One more proposal for each job that wants one; false when none did.
  bool extend(std::vector<Drafting>& drafting);
  void record(Drafting& d, const SampledToken& token);
  SequenceStep step_for(Mirror& m, uint64_t seq_id, std::span<const int32_t> tokens, size_t start, bool sample);

  std::unique_ptr<ModelRunner> runner_;
  int32_t target_vocab_ = 0;
  std::vector<int32_t> end_tokens_;
  PageAllocator pages_;
  std::unordered_map<uint64_t, Mirror> mirrors_;
};

}  // namespace tessera
