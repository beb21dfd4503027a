#include "kernels/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "engine/tensor/aligned_buffer.h"
#include "kernels/cpu/dequantize.h"

namespace tessera::cpu {
namespace {

void dequantize_kernel(const DequantizeArgs& args, Stream&) {
  dequantize_row(args.src_dtype, args.src, args.dst, args.n_elems);
}

}  // namespace

CpuBackend::CpuBackend() : isa_(detect_isa()) { kernels_.dequantize = dequantize_kernel; }

std::string CpuBackend::describe() const {
  return "cpu: " + std::to_string(std::thread::hardware_concurrency()) + " threads, isa " + isa_.best_level() +
         " (" + isa_.to_string() + ")";
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
  std::memcpy(dst, src, bytes);
}

void CpuBackend::copy_device_to_host(void* dst, const void* src, size_t bytes, Stream&) {
  std::memcpy(dst, src, bytes);
}

bool CpuBackend::supports(Op op, DType dtype) const {
  switch (op) {
    case Op::kDequantize: return can_dequantize(dtype);
  }
  return false;
}

}  // namespace tessera::cpu

namespace tessera {

BackendFactory cpu_backend_factory() {
  return {DeviceKind::kCpu, "cpu", [] { return 1; },
          [](int) -> std::unique_ptr<Backend> { return std::make_unique<cpu::CpuBackend>(); }};
}

}  // namespace tessera
