#pragma once
// Paged FlexAttention on the GPU: one kernel family over the page table,
// specialised at compile time for the mask and score modifiers and the
// cache element type; the same kernel serves decode and chunked prefill,
// with the CPU backend's arithmetic.
#include "kernels/backend.h"
#include "kernels/offload_backend.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

// The step's batch as plan_attention saw it: device pointers, read by every layer.
using GpuAttentionPlan = OffloadAttentionPlan;

// Why attention over this cache has no kernel here, or empty when it has one
// (the query grouping is checked by ops::query_groups).
std::string attention_refusal(int head_dim, DType kv_dtype);

void plan_attention(const AttentionPlanArgs& args);
void launch_attention(const AttentionArgs& args, cudaStream_t stream);

}  // namespace tessera::gpu
