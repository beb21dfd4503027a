#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/gpu_runtime.h"

#include <string>

namespace tessera::gpu {
namespace {

class GpuStream final : public Stream {
 public:
  explicit GpuStream(int device) {
    check(cudaSetDevice(device), "set device");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "create stream");
  }
  ~GpuStream() override { cudaStreamDestroy(stream_); }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "stream synchronize"); }
  cudaStream_t handle() const { return stream_; }

 private:
  cudaStream_t stream_{};
};

void dequantize_on_stream(const DequantizeArgs& args, Stream& stream) {
  launch_dequantize(args, static_cast<GpuStream&>(stream).handle());
}

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(int device) : index_(device), stream_(device) {
    check(cudaGetDeviceProperties(&props_, device), "device properties");
    kernels_.dequantize = dequantize_on_stream;
  }

  Device device() const override { return {DeviceKind::kCuda, index_}; }

  std::string describe() const override {
    return "cuda:" + std::to_string(index_) + ": " + props_.name + ", sm_" + std::to_string(props_.major) +
           std::to_string(props_.minor) + ", " + std::to_string(props_.totalGlobalMem >> 20) + " MiB, " +
           std::to_string(props_.multiProcessorCount) + " SMs";
  }

  void* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaSetDevice(index_), "set device");
    check(cudaMalloc(&p, bytes), ("allocate " + std::to_string(bytes) + " bytes").c_str());
    return p;
  }

  void deallocate(void* ptr) override { cudaFree(ptr); }

  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<GpuStream&>(stream).handle()),
          "copy to device");
  }

  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<GpuStream&>(stream).handle()),
          "copy to host");
  }

  Stream& default_stream() override { return stream_; }

  bool supports(Op op, DType dtype) const override {
    switch (op) {
      case Op::kDequantize: return can_dequantize(dtype);
    }
    return false;
  }

  const KernelTable& kernels() const override { return kernels_; }

 private:
  int index_;
  GpuStream stream_;
  cudaDeviceProp props_{};
  KernelTable kernels_;
};

int device_count() {
  int count = 0;
  // No driver or no device both mean "none here", not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace
}  // namespace tessera::gpu

namespace tessera {

BackendFactory cuda_backend_factory() {
  return {DeviceKind::kCuda, "cuda", gpu::device_count,
          [](int index) -> std::unique_ptr<Backend> { return std::make_unique<gpu::GpuBackend>(index); }};
}

}  // namespace tessera
