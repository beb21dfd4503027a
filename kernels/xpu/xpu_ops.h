#pragma once
// The op table on an OpenCL queue: each entry sets its kernel's arguments
// from the op's argument struct and enqueues it (kernels/xpu/cl).
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/offload_backend.h"
#include "kernels/xpu/launch.h"

namespace tessera::xpu {

// Device memory for quantized activations, grown when a larger batch
// arrives. Outgrown buffers are kept until the scratch goes: kernels still
// queued keep reading theirs.
class Q8Scratch {
 public:
  explicit Q8Scratch(DeviceMemory& memory) : memory_(memory) {}
  Q8Scratch(const Q8Scratch&) = delete;
  Q8Scratch& operator=(const Q8Scratch&) = delete;
  ~Q8Scratch();
  void* reserve(size_t bytes);

 private:
  DeviceMemory& memory_;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::vector<void*> retired_;
};

// What an op needs of the stream it runs on.
struct QueueState {
  cl_command_queue queue;
  Q8Scratch* scratch;
};

// A weight resident in device memory, rows as the checkpoint stores them.
using XpuLinear = OffloadLinear;

// The step's batch as plan_attention saw it: device pointers, read by every layer.
using XpuAttentionPlan = OffloadAttentionPlan;

// The weight and table formats the kernels decode.
bool decodable(DType dtype);
// Why `weight` has no kernel here, or empty when it has one.
std::string linear_refusal(const QuantizedLinear& weight);

void run_dequantize(const LaunchContext& cx, const DequantizeArgs& a, const QueueState& q);
void run_embedding(const LaunchContext& cx, const EmbeddingArgs& a, const QueueState& q);
void run_rms_norm(const LaunchContext& cx, const RmsNormArgs& a, const QueueState& q);
void run_rope(const LaunchContext& cx, const RopeArgs& a, const QueueState& q);
void run_linear(const LaunchContext& cx, const LinearArgs& a, const QueueState& q);
void run_kv_write(const LaunchContext& cx, const KvWriteArgs& a, const QueueState& q);
void run_plan_attention(const AttentionPlanArgs& a);
void run_attention(const LaunchContext& cx, const AttentionArgs& a, const QueueState& q);
void run_gated_activation(const LaunchContext& cx, const GatedActivationArgs& a, const QueueState& q);
void run_add(const LaunchContext& cx, const AddArgs& a, const QueueState& q);
void run_scale(const LaunchContext& cx, const ScaleArgs& a, const QueueState& q);
void run_softcap(const LaunchContext& cx, const SoftcapArgs& a, const QueueState& q);
void run_gather_rows(const LaunchContext& cx, const GatherRowsArgs& a, const QueueState& q);
void run_scatter_add_rows(const LaunchContext& cx, const ScatterAddRowsArgs& a, const QueueState& q);

}  // namespace tessera::xpu
