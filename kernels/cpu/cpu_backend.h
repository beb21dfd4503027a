#pragma once
// The CPU backend: host memory, a synchronous stream, and kernels chosen by
// the instruction sets found at run time. It is the reference for every
// other backend's parity tests.
#include <memory>

#include "kernels/backend.h"
#include "kernels/backend_registry.h"
#include "kernels/cpu/isa.h"

namespace tessera::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();

  Device device() const override { return {DeviceKind::kCpu, 0}; }
  std::string describe() const override;
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) override;
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) override;
  Stream& default_stream() override { return stream_; }
  bool supports(Op op, DType dtype) const override;
  const KernelTable& kernels() const override { return kernels_; }

  const IsaFeatures& isa() const { return isa_; }

 private:
  class HostStream final : public Stream {
   public:
    void synchronize() override {}
  };

  IsaFeatures isa_;
  HostStream stream_;
  KernelTable kernels_;
};

}  // namespace tessera::cpu

namespace tessera {
BackendFactory cpu_backend_factory();
}
