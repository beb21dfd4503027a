#include "kernels/cpu/runtime/cpu_backend.h"
#include "kernels/comm/gloo_communicator.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

#include "engine/core/error.h"
#include "engine/tensor/aligned_buffer.h"
#include "kernels/cpu/runtime/cpu_prepared.h"
#include "kernels/cpu/runtime/resident_pages.h"
#include "quant/dequantize.h"
#include "quant/int_weights.h"

namespace tessera::cpu {
namespace {

int default_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

// The host has no work queue to wait for: every op has finished on return.
class HostEvent final : public Event {
 public:
  void synchronize() override {}
};

// Available memory as the kernel estimates it (MemAvailable), in bytes.
uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// The bytes weights are read from: a copy in `arena` (huge pages), the
// mapping's copied pages then released, where an arena is given and can map
// one; else `data` in place, made resident. `chunk` keeps the copy mapped.
const void* weight_bytes(HugePageArena* arena, const void* data, size_t bytes, std::shared_ptr<const void>& chunk) {
  if (arena) {
    HugePageArena::Copy copy = arena->copy(data, bytes);
    if (copy.data) {
      release_pages(data, bytes);
      chunk = std::move(copy.chunk);
      return copy.data;
    }
  }
  make_resident(data, bytes);
  return data;
}

}  // namespace

CpuLinear::CpuLinear(const QuantizedLinear& desc, const IsaFeatures& isa, HugePageArena* arena) : PreparedLinear(desc) {
  const WeightScheme& scheme = desc.scheme;
  if (quant::is_int_scheme(scheme)) {
    int_weight_ = std::make_unique<IntLinear>(desc, isa, IntLayout::kAuto, arena);
    // Packed into a copy of their own: the checkpoint's pages of the codes
    // leave resident memory (read again from the file should anything ask).
    if (!desc.loader_owned && desc.data) release_pages(desc.data, size_t(uint64_t(desc.rows) * desc.row_stride));
    return;
  }
  if (desc.scales || desc.zero_points || scheme.activation != ActivationPolicy::kNone) {
    throw Error("weight '" + desc.name + "': the CPU backend has no kernel for scheme " + scheme.describe());
  }
  // Bytes the loader made (a conversion) are read where they are: a copy
  // would double them. Rows of partial blocks are refused, naming the
  // weight, by LinearWeight.
  const auto bytes = dtype_bytes(scheme.storage, uint64_t(desc.rows) * uint64_t(desc.cols));
  const bool copyable = bytes && uint64_t(desc.rows) * desc.row_stride == *bytes && !desc.loader_owned;
  const void* data = bytes ? weight_bytes(copyable ? arena : nullptr, desc.data, size_t(*bytes), arena_chunk_) : desc.data;
  weight_.emplace(desc.name, scheme.storage, data, desc.rows, desc.cols, isa, desc.multiplies_prompts);
}

CpuBackend::CpuBackend(const CpuBackendOptions& options)
    : isa_(options.isa ? *options.isa : detect_isa()), pool_(default_threads(options.threads)), stream_(pool_, isa_) {}

std::string CpuBackend::describe() const {
  return "cpu: " + std::to_string(pool_.size()) + " threads, isa " + isa_.best_level() + " (" + isa_.to_string() + ")";
}

MemoryInfo CpuBackend::memory_info() const {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  MemoryInfo info;
  info.total_bytes = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
  info.free_bytes = available_memory_bytes();
  return info;
}

void* CpuBackend::allocate(size_t bytes) {
  const size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded < bytes) throw std::bad_alloc();
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void CpuBackend::deallocate(void* ptr) { std::free(ptr); }

void CpuBackend::copy_host_to_device(void* dst, const void* src, size_t bytes, Stream&) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void CpuBackend::copy_device_to_host(void* dst, const void* src, size_t bytes, Stream&) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void CpuBackend::fill_zero(void* dst, size_t bytes, Stream&) {
  if (bytes) std::memset(dst, 0, bytes);
}

std::shared_ptr<const void> CpuBackend::place_weights(const void* host, size_t bytes) {
  // Copied to huge pages as linear weights are (an embedding table is read
  // row by row; a tied one shares the output head's copy). Read in place,
  // the owner of the checkpoint keeps the mapping alive.
  std::shared_ptr<const void> chunk;
  const void* data = weight_bytes(huge_pages_ ? &weight_arena_ : nullptr, host, bytes, chunk);
  return chunk ? std::shared_ptr<const void>(std::move(chunk), data) : std::shared_ptr<const void>(host, [](const void*) {});
}

std::unique_ptr<Event> CpuBackend::create_event() { return std::make_unique<HostEvent>(); }

bool CpuBackend::supports(Op op, DType dtype) const {
  switch (op) {
    case Op::kDequantize:
    case Op::kEmbedding: return can_dequantize(dtype);
    case Op::kLinear:
      return dtype == DType::kBF16 || dtype == DType::kI8 || dtype == DType::kInt4 || select_vec_dot(dtype, isa_).fn != nullptr;
    case Op::kKvWrite:
    case Op::kAttention: return dtype == DType::kF16 || dtype == DType::kF32 || dtype == DType::kI8;
    case Op::kRmsNorm:
    case Op::kRope:
    case Op::kGatedActivation:
    case Op::kAdd:
    case Op::kScale:
    case Op::kSoftcap:
    case Op::kGatherRows:
    case Op::kScatterAddRows: return dtype == DType::kF32;
  }
  return false;
}

const KernelTable& CpuBackend::kernels() const { return cpu_kernel_table(); }

std::unique_ptr<PreparedLinear> CpuBackend::prepare_linear(const QuantizedLinear& weight) {
  return std::make_unique<CpuLinear>(weight, isa_, huge_pages_ ? &weight_arena_ : nullptr);
}

std::unique_ptr<Communicator> CpuBackend::create_communicator(const CommunicatorOptions& options) {
  return std::make_unique<GlooCommunicator>(options);
}

std::unique_ptr<AttentionPlan> CpuBackend::create_attention_plan(int max_tokens, int max_seqs, int n_kv_heads) {
  return std::make_unique<CpuAttentionPlan>(size_t(max_tokens / kQueryTile + max_seqs) * size_t(n_kv_heads), pool_.size());
}

}  // namespace tessera::cpu

namespace tessera {

BackendFactory cpu_backend_factory() {
  return {kCpuDevice, "cpu", [] { return 1; },
          [](int, const BackendOptions& options) -> std::unique_ptr<Backend> {
            return std::make_unique<cpu::CpuBackend>(cpu::CpuBackendOptions{options.threads, std::nullopt});
          }};
}

}  // namespace tessera
