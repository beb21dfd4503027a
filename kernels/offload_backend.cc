#include "kernels/offload_backend.h"

#include "engine/core/error.h"

namespace tessera {

bool OffloadBackend::supports(Op op, DType dtype) const {
  switch (op) {
    case Op::kDequantize:
    case Op::kEmbedding:
    case Op::kLinear: return decodes_format(dtype);
    case Op::kKvWrite:
    case Op::kAttention: return dtype == DType::kF16 || dtype == DType::kF32;
    default: return dtype == DType::kF32;
  }
}

std::unique_ptr<PreparedLinear> OffloadBackend::prepare_linear(const QuantizedLinear& weight) {
  const std::string refusal = refuse_linear(weight);
  if (!refusal.empty()) throw Error("weight '" + weight.name + "': " + refusal);
  auto data = place_weights(weight.data, weight.row_stride * uint64_t(weight.rows));
  auto bias = weight.bias ? place_weights(weight.bias, size_t(weight.rows) * sizeof(float)) : nullptr;
  return std::make_unique<OffloadLinear>(weight, std::move(data), std::move(bias));
}

std::unique_ptr<AttentionPlan> OffloadBackend::create_attention_plan(int max_tokens, int max_seqs, int) {
  return std::make_unique<OffloadAttentionPlan>(max_tokens, max_seqs);
}

}  // namespace tessera
