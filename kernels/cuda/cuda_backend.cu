#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gguf_chunks.cuh"
#include "kernels/cuda/gpu_runtime.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/nccl_communicator.h"

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
  Q8Scratch& q8_scratch() { return q8_scratch_; }

 private:
  cudaStream_t stream_{};
  Q8Scratch q8_scratch_;
};

class GpuRecording final : public Recording {
 public:
  explicit GpuRecording(cudaGraphExec_t exec) : exec_(exec) {}
  ~GpuRecording() override { cudaGraphExecDestroy(exec_); }
  void replay(Stream& stream) override {
    check(cudaGraphLaunch(exec_, static_cast<GpuStream&>(stream).handle()), "graph launch");
  }

 private:
  cudaGraphExec_t exec_;
};

// The stream's work between the two calls as a graph, instantiated.
std::unique_ptr<Recording> record_graph(cudaStream_t stream, const std::function<void()>& enqueue) {
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  check(cudaStreamEndCapture(stream, &graph), "end capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(status, "instantiate graph");
  return std::make_unique<GpuRecording>(exec);
}

cudaStream_t handle(Stream& stream) { return static_cast<GpuStream&>(stream).handle(); }

// The table's entries: each op's launcher on the stream's CUDA stream.
template <class Args, void (*Launch)(const Args&, cudaStream_t)>
void on_stream(const Args& args, Stream& stream) {
  Launch(args, handle(stream));
}

void linear_on_stream(const LinearArgs& args, Stream& stream) {
  auto& gpu_stream = static_cast<GpuStream&>(stream);
  launch_linear(args, gpu_stream.handle(), gpu_stream.q8_scratch());
}

void plan_on_stream(const AttentionPlanArgs& args, Stream&) { plan_attention(args); }

KernelTable make_table() {
  KernelTable t;
  t.dequantize = on_stream<DequantizeArgs, launch_dequantize>;
  t.embedding = on_stream<EmbeddingArgs, launch_embedding>;
  t.rms_norm = on_stream<RmsNormArgs, launch_rms_norm>;
  t.rope = on_stream<RopeArgs, launch_rope>;
  t.linear = linear_on_stream;
  t.kv_write = on_stream<KvWriteArgs, launch_kv_write>;
  t.plan_attention = plan_on_stream;
  t.attention = on_stream<AttentionArgs, launch_attention>;
  t.gated_activation = on_stream<GatedActivationArgs, launch_gated_activation>;
  t.add = on_stream<AddArgs, launch_add>;
  t.scale = on_stream<ScaleArgs, launch_scale>;
  t.softcap = on_stream<SoftcapArgs, launch_softcap>;
  t.gather_rows = on_stream<GatherRowsArgs, launch_gather_rows>;
  t.scatter_add_rows = on_stream<ScatterAddRowsArgs, launch_scatter_add_rows>;
  return t;
}

// What the kernels cannot serve is refused when a model is loaded
// (supports, prepare_linear), never mid-request.
class GpuBackend final : public OffloadBackend {
 public:
  explicit GpuBackend(int device) : index_(device), stream_(device), kernels_(make_table()) {
    check(cudaGetDeviceProperties(&props_, device), "device properties");
  }

  Device device() const override { return {kDeviceKind, index_}; }

  std::string describe() const override {
    return std::string(kDeviceName) + ":" + std::to_string(index_) + ": " + props_.name + ", " + architecture(props_) +
           ", " + std::to_string(props_.totalGlobalMem >> 20) + " MiB, " +
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

  bool decodes_format(DType dtype) const override { return chunk_decodable(dtype); }
  std::string refuse_linear(const QuantizedLinear& weight) const override { return linear_refusal(weight); }

  bool reads_rope_angle_table() const override { return true; }

  const KernelTable& kernels() const override { return kernels_; }

  std::unique_ptr<Recording> record(Stream& stream, const std::function<void()>& enqueue) override {
    return record_graph(static_cast<GpuStream&>(stream).handle(), enqueue);
  }

  std::unique_ptr<Communicator> create_communicator(const CommunicatorOptions& options) override {
#if TESSERA_WITH_NCCL
    return create_nccl_communicator(options, index_);
#else
    (void)options;
    throw CollectiveError(describe() + ": this build has no NCCL (install it and rebuild for GPU parallel groups)");
#endif
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

cudaStream_t stream_handle(Stream& stream) { return handle(stream); }

}  // namespace tessera::gpu

namespace tessera {

std::string cuda_unusable_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no ") + gpu::kPlatformName + " device: " + cudaGetErrorString(status);
  }
  return count == 0 ? std::string("no ") + gpu::kPlatformName + " device on this machine" : "";
}

BackendFactory cuda_backend_factory() {
  return {gpu::kDeviceKind, gpu::kDeviceName, gpu::device_count,
          [](int index, const BackendOptions&) -> std::unique_ptr<Backend> { return std::make_unique<gpu::GpuBackend>(index); }};
}

}  // namespace tessera
