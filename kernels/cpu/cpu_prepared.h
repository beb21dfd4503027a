#pragma once
// The CPU's prepared form of a linear weight and the attention plan: what
// CpuBackend hands out and the CPU kernel table reads back.
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/flex_attention.h"
#include "kernels/cpu/matmul.h"

namespace tessera::cpu {

class CpuLinear final : public PreparedLinear {
 public:
  CpuLinear(const QuantizedLinear& desc, const IsaFeatures& isa);
  const LinearWeight& weight() const { return weight_; }
  const float* bias() const { return desc().bias; }

 private:
  LinearWeight weight_;
};

class CpuAttentionPlan final : public AttentionPlan {
 public:
  CpuAttentionPlan(size_t capacity, int threads) : scratch(size_t(threads)) { items.reserve(capacity); }
  std::vector<AttentionWorkItem> items;
  ops::AttentionBatch batch{};
  // Each layer's kernel reuses these; the plan is const to the layers.
  mutable std::vector<AttentionScratch> scratch;
};

}  // namespace tessera::cpu
