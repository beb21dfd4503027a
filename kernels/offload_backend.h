#pragma once
// What the backends that run the op table in their own device memory (CUDA,
// ROCm, XPU) share above their kernels: which ops and dtypes they take, how
// a linear weight is placed at load (its rows as the checkpoint stores them,
// copied once), and the attention plan the step's batch is kept in. Each
// such backend says only which formats its kernels decode and why a weight
// has no kernel.
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/op_types.h"

namespace tessera {

// A linear weight resident in device memory, rows as the checkpoint stores them.
class OffloadLinear final : public PreparedLinear {
 public:
  OffloadLinear(const QuantizedLinear& desc, std::shared_ptr<const void> data, std::shared_ptr<const void> bias)
      : PreparedLinear(desc), data_(std::move(data)), bias_(std::move(bias)) {}
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_.get()); }
  const float* bias() const { return static_cast<const float*>(bias_.get()); }

 private:
  std::shared_ptr<const void> data_;  // (rows, row_stride bytes)
  std::shared_ptr<const void> bias_;  // (rows) f32, or null
};

// The step's batch as plan_attention saw it: device pointers, read by every layer.
class OffloadAttentionPlan final : public AttentionPlan {
 public:
  OffloadAttentionPlan(int max_tokens, int max_seqs) : max_tokens(max_tokens), max_seqs(max_seqs) {}
  int max_tokens, max_seqs;
  ops::AttentionBatch batch{};
  int n_tokens = 0;
};

class OffloadBackend : public Backend {
 public:
  // Block formats where the kernels decode them; KV and attention in f16 or
  // f32; every other op in f32.
  bool supports(Op op, DType dtype) const override;
  // Refused (naming the weight) where the kernels have none; else the rows
  // and bias placed in device memory.
  std::unique_ptr<PreparedLinear> prepare_linear(const QuantizedLinear& weight) override;
  std::unique_ptr<AttentionPlan> create_attention_plan(int max_tokens, int max_seqs, int) override;

 protected:
  // Whether the kernels read this weight or table format.
  virtual bool decodes_format(DType dtype) const = 0;
  // Why `weight` has no kernel here, or empty when it has one.
  virtual std::string refuse_linear(const QuantizedLinear& weight) const = 0;
};

}  // namespace tessera
