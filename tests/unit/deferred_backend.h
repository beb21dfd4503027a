#pragma once
// A deliberately different backend for tests, behaving as a GPU does where
// that matters to the code above the op table: every op and copy is queued
// on the stream and runs only at synchronize() (or when a recorded event is
// waited for), host-to-device copies take their bytes at the call, weights
// are copied into the backend's own memory instead of read in place, and the
// kernels are the portable ones on one thread, and recordings replay their
// work with the arguments of the recording. A decoder or runner that
// reads device memory without a copy and a synchronize, or hands a kernel
// host memory that changes before it runs, gets stale or wrong numbers here.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/runtime/cpu_backend.h"

namespace tessera::test {

class DeferredBackend final : public Backend {
 public:
  // `records`: whether record() records (else it returns null, as a
  // backend without recordings does).
  explicit DeferredBackend(bool records = true);
  ~DeferredBackend() override;

  Device device() const override { return {kCpuDevice, 0}; }
  std::string describe() const override { return "deferred test backend (portable kernels, queued work)"; }
  MemoryInfo memory_info() const override { return memory_ ? *memory_ : inner_.memory_info(); }
  // Reports `memory` from now on instead of the host's.
  void pretend_memory(const MemoryInfo& memory) { memory_ = memory; }
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) override;
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) override;
  void fill_zero(void* dst, size_t bytes, Stream& stream) override;
  std::shared_ptr<const void> place_weights(const void* host, size_t bytes) override;
  Stream& default_stream() override;
  std::unique_ptr<Event> create_event() override;
  bool supports(Op op, DType dtype) const override { return inner_.supports(op, dtype); }
  bool reads_rope_angle_table() const override { return inner_.reads_rope_angle_table(); }
  const KernelTable& kernels() const override;
  std::unique_ptr<PreparedLinear> prepare_linear(const QuantizedLinear& weight) override;
  std::unique_ptr<AttentionPlan> create_attention_plan(int max_tokens, int max_seqs, int n_kv_heads) override {
    return inner_.create_attention_plan(max_tokens, max_seqs, n_kv_heads);
  }

  // Records as a CUDA graph does: the work's closures, replayed with the
  // arguments they were recorded with.
  std::unique_ptr<Recording> record(Stream& stream, const std::function<void()>& enqueue) override;

  // Ops queued so far (each op and copy counts one).
  size_t queued_ops() const;
  size_t recordings() const { return recordings_; }
  size_t replays() const { return replays_; }

 private:
  bool records_;
  cpu::CpuBackend inner_;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<const void>> weight_copies_;
  size_t recordings_ = 0, replays_ = 0;
  std::optional<MemoryInfo> memory_;
};

}  // namespace tessera::test
