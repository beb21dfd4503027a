#pragma once
// The contract between the engine and a compute device. A backend is a
// device, an allocator, streams and events, and a table of kernels, one per
// op of the forward pass, each taking an argument struct of pointers into
// the backend's memory and shapes (kernels/op_args.h). Which kernel serves a
// weight is decided once, at load (prepare_linear), never mid-request.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/core/stream.h"
#include "engine/tensor/device.h"
#include "engine/tensor/dtype.h"
#include "kernels/comm/communicator.h"
#include "kernels/op_args.h"
#include "quant/weight_scheme.h"

namespace tessera {

enum class Op : uint8_t {
  kDequantize,
  kEmbedding,
  kRmsNorm,
  kRope,
  kLinear,
  kKvWrite,
  kAttention,
  kGatedActivation,
  kAdd,
  kScale,
  kSoftcap,
  kGatherRows,
  kScatterAddRows,
};

std::string_view op_name(Op op);

// A linear weight in the backend's own form: kernel chosen, data resident
// (and repacked, where the backend wants another layout).
class PreparedLinear {
 public:
  explicit PreparedLinear(const QuantizedLinear& desc) : desc_(desc) {}
  virtual ~PreparedLinear() = default;
  const QuantizedLinear& desc() const { return desc_; }
  int64_t rows() const { return desc_.rows; }
  int64_t cols() const { return desc_.cols; }

 private:
  QuantizedLinear desc_;
};

// The work items of one step's attention, built once per step by
// kernels().plan_attention and read by every layer's kernels().attention.
// Sized at creation for the largest batch: planning never allocates.
class AttentionPlan {
 public:
  virtual ~AttentionPlan() = default;
};

// Work recorded once from a stream and replayed as a whole, with the
// arguments it was recorded with (a CUDA graph): what the host spends
// launching kernels one by one, it spends once.
class Recording {
 public:
  virtual ~Recording() = default;
  virtual void replay(Stream& stream) = 0;
};

struct KernelTable {
  void (*dequantize)(const DequantizeArgs&, Stream&) = nullptr;
  void (*embedding)(const EmbeddingArgs&, Stream&) = nullptr;
  void (*rms_norm)(const RmsNormArgs&, Stream&) = nullptr;
  void (*rope)(const RopeArgs&, Stream&) = nullptr;
  void (*linear)(const LinearArgs&, Stream&) = nullptr;
  void (*kv_write)(const KvWriteArgs&, Stream&) = nullptr;
  void (*plan_attention)(const AttentionPlanArgs&, Stream&) = nullptr;
  void (*attention)(const AttentionArgs&, Stream&) = nullptr;
  void (*gated_activation)(const GatedActivationArgs&, Stream&) = nullptr;
  void (*add)(const AddArgs&, Stream&) = nullptr;
  void (*scale)(const ScaleArgs&, Stream&) = nullptr;
  void (*softcap)(const SoftcapArgs&, Stream&) = nullptr;
  void (*gather_rows)(const GatherRowsArgs&, Stream&) = nullptr;
  void (*scatter_add_rows)(const ScatterAddRowsArgs&, Stream&) = nullptr;
};

struct MemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // Human-readable description: model, memory, instruction sets.
  virtual std::string describe() const = 0;
  virtual MemoryInfo memory_info() const = 0;

  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void fill_zero(void* dst, size_t bytes, Stream& stream) = 0;

  // Checkpoint bytes made resident on the device: a copy where the device
  // cannot read host memory, the bytes themselves where it can (the CPU
  // reads the mapped file in place). Valid while the result lives.
  virtual std::shared_ptr<const void> place_weights(const void* host, size_t bytes) = 0;

  virtual Stream& default_stream() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;

  virtual bool supports(Op op, DType dtype) const = 0;
  // Whether RoPE should read its angles' cosines and sines from a table the
  // host computes (ops::RopeParams::cos_table): where the device's own sine
  // and cosine round otherwise than the CPU's.
  virtual bool reads_rope_angle_table() const { return false; }
  virtual const KernelTable& kernels() const = 0;

  // Throws tessera::Error naming the weight when no kernel serves its scheme.
  virtual std::unique_ptr<PreparedLinear> prepare_linear(const QuantizedLinear& weight) = 0;
  virtual std::unique_ptr<AttentionPlan> create_attention_plan(int max_tokens, int max_seqs, int n_kv_heads) = 0;

  // Records the work `enqueue` queues on `stream`, without running it; null
  // where the backend does not record (the caller then runs `enqueue`).
  // Everything the work reads and writes must stay at the same addresses
  // for as long as the recording is replayed.
  virtual std::unique_ptr<Recording> record(Stream&, const std::function<void()>&) { return nullptr; }

  // Joins the parallel group `options` names, over the transport this
  // device's memory calls for. Throws CollectiveError.
  virtual std::unique_ptr<Communicator> create_communicator(const CommunicatorOptions& options);
};

// Device memory owned through the backend that allocated it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  size_t size() const { return size_; }

 private:
  void release();

  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tessera
