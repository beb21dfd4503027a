#pragma once
// A context-parallel rank's view of each step plan: the batch it runs (its
// share of every split step, every other step whole), the ContextShare the
// decoder's KV ring reads, and the logits each rank's rows hold. Every rank
// derives the same division from the plan, so no rank is told its part.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/runtime/batch_buffers.h"
#include "engine/runtime/parallel/context_split.h"
#include "engine/runtime/step_plan.h"
#include "models/kv_ring.h"

namespace tessera {

class ContextSteps {
 public:
  // `min_tokens`: the smallest step that is split.
  ContextSteps(Backend& backend, Communicator& comm, int min_tokens);

  // The batch of this rank for `plan`, whose step i reads page table
  // `pages[i]`; the share is null when no step is split. Rank 0 alone
  // computes the logits of whole steps; the spans in the result point into
  // this object until the next call.
  std::vector<BatchSequence> divide(const StepPlan& plan, const std::vector<const int32_t*>& pages, int page_size,
                                    Stream& stream);
  const ContextShare* share() const { return share_.n_own > 0 ? &share_ : nullptr; }
  // Rank 0: the plan's logit rows (what sampling reads, in plan order) into
  // `host`, (rows, vocab), from its own `device_logits` and every other
  // rank's. Another rank: sends rank 0 the rows it computed.
  void collect_logits(const float* device_logits, int64_t vocab, std::vector<float>& host, Stream& stream);
  int64_t plan_logit_rows() const { return plan_rows_total_; }

 private:
  void number_logit_rows(const StepPlan& plan, const ContextSplit& split);
  void upload(Stream& stream);

  Backend& backend_;
  Communicator& comm_;
  int min_tokens_;
  std::vector<std::array<TokenRange, 2>> ranges_;  // per step: this rank's chunks
  std::vector<int32_t> own_rows_;                   // (this rank's split tokens)
  std::vector<int64_t> slots_;                      // (every rank's split tokens), rank order
  std::vector<std::vector<int32_t>> plan_rows_;     // per rank: the plan row of each logit row it computes
  int64_t plan_rows_total_ = 0;
  ContextShare share_;
  DeviceBuffer own_rows_device_, slots_device_, peer_logits_;
  std::vector<float> staging_;
};

}  // namespace tessera
