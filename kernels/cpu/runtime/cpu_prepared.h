#pragma once
// The CPU's prepared form of a linear weight and the attention plan: what
// CpuBackend hands out and the CPU kernel table reads back.
#include <memory>
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/attention/flex_attention.h"
#include "kernels/cpu/linear/int_linear.h"
#include "kernels/cpu/linear/matmul.h"
#include "kernels/cpu/runtime/huge_page_arena.h"

namespace tessera::cpu {

class CpuLinear final : public PreparedLinear {
 public:
  // Weights read from the checkpoint's mapping are copied into `arena` (huge
  // pages) when it is given.
  CpuLinear(const QuantizedLinear& desc, const IsaFeatures& isa, HugePageArena* arena = nullptr);
  // Exactly one of these is set: GGUF blocks and floats, or integer schemes.
  const LinearWeight* weight() const { return weight_ ? &*weight_ : nullptr; }
  const IntLinear* int_weight() const { return int_weight_.get(); }
  const float* bias() const { return desc().bias; }

 private:
  std::shared_ptr<const void> arena_chunk_;  // holds the weight's copy, when it reads one
  std::optional<LinearWeight> weight_;
  std::unique_ptr<IntLinear> int_weight_;
};

class CpuAttentionPlan final : public AttentionPlan {
 public:
  CpuAttentionPlan(size_t capacity, int threads) : workspace(threads) { items.reserve(capacity); }
  std::vector<AttentionWorkItem> items;
  ops::AttentionBatch batch{};
  // Each layer's kernel reuses these; the plan is const to the layers.
  mutable AttentionWorkspace workspace;
};

}  // namespace tessera::cpu
