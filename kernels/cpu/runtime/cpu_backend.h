#pragma once
// The CPU backend: host memory, a synchronous stream that carries the thread
// pool, the instruction sets in use and the matmul scratch, and the kernels
// of kernels/cpu. It is the reference for every other backend's parity tests.
#include <memory>
#include <optional>

#include "kernels/backend.h"
#include "kernels/backend_registry.h"
#include "kernels/cpu/linear/int_linear.h"
#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/linear/matmul.h"
#include "kernels/cpu/runtime/huge_page_arena.h"
#include "kernels/cpu/runtime/thread_pool.h"

namespace tessera::cpu {

struct CpuBackendOptions {
  int threads = 0;                  // 0: one per hardware thread
  std::optional<IsaFeatures> isa;   // unset: detected; an empty IsaFeatures gives the portable kernels
};

// What every CPU kernel runs with; kernels of the table reach it through
// the stream they are given.
class CpuStream final : public Stream {
 public:
  CpuStream(ThreadPool& pool, const IsaFeatures& isa) : pool_(pool), isa_(isa) {}
  void synchronize() override {}
  void record(Event&) override {}
  void wait(Event&) override {}

  ThreadPool& pool() { return pool_; }
  const IsaFeatures& isa() const { return isa_; }
  MatmulScratch& matmul_scratch() { return scratch_; }
  IntActivations& int_activations() { return int_activations_; }

 private:
  ThreadPool& pool_;
  const IsaFeatures& isa_;
  MatmulScratch scratch_;
  IntActivations int_activations_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options = {});

  Device device() const override { return {kCpuDevice, 0}; }
  std::string describe() const override;
  MemoryInfo memory_info() const override;
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) override;
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) override;
  void fill_zero(void* dst, size_t bytes, Stream& stream) override;
  std::shared_ptr<const void> place_weights(const void* host, size_t bytes) override;
  Stream& default_stream() override { return stream_; }
  std::unique_ptr<Communicator> create_communicator(const CommunicatorOptions& options) override;
  std::unique_ptr<Event> create_event() override;
  bool supports(Op op, DType dtype) const override;
  const KernelTable& kernels() const override;
  std::unique_ptr<PreparedLinear> prepare_linear(const QuantizedLinear& weight) override;
  std::unique_ptr<AttentionPlan> create_attention_plan(int max_tokens, int max_seqs, int n_kv_heads) override;

  const IsaFeatures& isa() const { return isa_; }
  int threads() const { return pool_.size(); }

 private:
  IsaFeatures isa_;
  ThreadPool pool_;
  CpuStream stream_;
  // Weights read from a checkpoint's mapping are copied here (huge pages)
  // where the system grants huge pages, unless TESSERA_CPU_HUGE_PAGES=0.
  bool huge_pages_ = HugePageArena::wanted();
  HugePageArena weight_arena_;
};

// The CPU kernel table (kernels/cpu/runtime/cpu_kernels.cc).
const KernelTable& cpu_kernel_table();

}  // namespace tessera::cpu

namespace tessera {
BackendFactory cpu_backend_factory();
}
