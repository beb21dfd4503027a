#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/gpu_runtime.h"

#include <string>

namespace tessera::gpu {
namespace {

class GpuEvent final : public Event {
 public:
  explicit GpuEvent(int device) {
    check(cudaSetDevice(device), "set device");
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "create event");
  }
  ~GpuEvent() override { cudaEventDestroy(event_); }
  void synchronize() override { check(cudaEventSynchronize(event_), "event synchronize"); }
  cudaEvent_t handle() const { return event_; }

 private:
  cudaEvent_t event_{};
};

class GpuStream final : public Stream {
 public:
  explicit GpuStream(int device) {
    check(cudaSetDevice(device), "set device");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "create stream");
  }
  ~GpuStream() override { cudaStreamDestroy(stream_); }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "stream synchronize"); }
  void record(Event& event) override {
    check(cudaEventRecord(static_cast<GpuEvent&>(event).handle(), stream_), "event record");
  }
  void wait(Event& event) override {
    check(cudaStreamWaitEvent(stream_, static_cast<GpuEvent&>(event).handle(), 0), "stream wait");
  }
  cudaStream_t handle() const { return stream_; }

 private:
  cudaStream_t stream_{};
};

void dequantize_on_stream(const DequantizeArgs& args, Stream& stream) {
  launch_dequantize(args, static_cast<GpuStream&>(stream).handle());
}

KernelTable make_table() {
  KernelTable t;
  t.dequantize = dequantize_on_stream;
  return t;
}

// Ops of the table this backend does not implement yet are refused when a
// model is loaded (prepare_linear, create_attention_plan), never mid-request.
class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(int device) : index_(device), stream_(device), kernels_(make_table()) {
    check(cudaGetDeviceProperties(&props_, device), "device properties");
  }

  Device device() const override { return {DeviceKind::kCuda, index_}; }

  std::string describe() const override {
    return "cuda:" + std::to_string(index_) + ": " + props_.name + ", sm_" + std::to_string(props_.major) +
           std::to_string(props_.minor) + ", " + std::to_string(props_.totalGlobalMem >> 20) + " MiB, " +
           std::to_string(props_.multiProcessorCount) + " SMs";
  }

  MemoryInfo memory_info() const override {
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaSetDevice(index_), "set device");
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "memory info");
    return {free_bytes, total_bytes};
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

  void fill_zero(void* dst, size_t bytes, Stream& stream) override {
    check(cudaMemsetAsync(dst, 0, bytes, static_cast<GpuStream&>(stream).handle()), "fill zero");
  }

  std::shared_ptr<const void> place_weights(const void* host, size_t bytes) override {
    void* device = allocate(bytes);
    std::shared_ptr<const void> owned(device, [this](const void* p) { deallocate(const_cast<void*>(p)); });
    copy_host_to_device(device, host, bytes, stream_);
    stream_.synchronize();
    return owned;
  }

  Stream& default_stream() override { return stream_; }
  std::unique_ptr<Event> create_event() override { return std::make_unique<GpuEvent>(index_); }

  bool supports(Op op, DType dtype) const override { return op == Op::kDequantize && can_dequantize(dtype); }

  const KernelTable& kernels() const override { return kernels_; }

  std::unique_ptr<PreparedLinear> prepare_linear(const QuantizedLinear& weight) override {
    throw Error("weight '" + weight.name + "': the CUDA backend has no linear kernel for " + weight.scheme.describe() +
                " yet");
  }

  std::unique_ptr<AttentionPlan> create_attention_plan(int, int, int) override {
    throw Error("the CUDA backend has no attention kernel yet");
  }

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
          [](int index, const BackendOptions&) -> std::unique_ptr<Backend> { return std::make_unique<gpu::GpuBackend>(index); }};
}

}  // namespace tessera
