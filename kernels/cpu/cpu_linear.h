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
  explicit CpuAttentionPlan(size_t capacity) { items.reserve(capacity); }
  std::vector<AttentionWorkItem> items;
  ops::AttentionBatch batch{};
};

}  // namespace tessera::cpu
