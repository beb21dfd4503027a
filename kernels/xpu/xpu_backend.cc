#include "kernels/xpu/xpu_backend.h"

#include <memory>
#include <mutex>

#include "engine/core/error.h"
#include "kernels/xpu/device_inventory.h"
#include "kernels/xpu/device_memory.h"
#include "kernels/xpu/kernel_program.h"
#include "kernels/xpu/xpu_ops.h"

namespace tessera::xpu {
namespace {

class XpuEvent final : public Event {
 public:
  void synchronize() override {
    cl_event e = event_.get();
    if (e) check(clWaitForEvents(1, &e), "event synchronize");
  }
  void reset(cl_event event) { event_.reset(event); }
  cl_event handle() const { return event_.get(); }

 private:
  EventHandle event_;
};

// An in-order queue, and what the table's entries launched on it need:
// the backend's program and memory (through `launch`) and the activation
// scratch of this queue.
class XpuStream final : public Stream {
 public:
  XpuStream(cl_context context, cl_device_id device, const LaunchContext& launch) : launch_(launch), scratch_(*launch.memory) {
    cl_int status = CL_SUCCESS;
    queue_.reset(clCreateCommandQueueWithProperties(context, device, nullptr, &status));
    check(status, "create queue");
  }
  void synchronize() override { check(clFinish(queue_.get()), "stream synchronize"); }
  void record(Event& event) override {
    cl_event marker = nullptr;
    check(clEnqueueMarkerWithWaitList(queue_.get(), 0, nullptr, &marker), "event record");
    static_cast<XpuEvent&>(event).reset(marker);
  }
  void wait(Event& event) override {
    cl_event e = static_cast<XpuEvent&>(event).handle();
    if (e) check(clEnqueueBarrierWithWaitList(queue_.get(), 1, &e, nullptr), "stream wait");
  }
  cl_command_queue queue() const { return queue_.get(); }
  const LaunchContext& launch_context() const { return launch_; }
  QueueState state() { return {queue_.get(), &scratch_}; }

 private:
  QueueHandle queue_;
  const LaunchContext& launch_;
  Q8Scratch scratch_;
};

template <class Args, void (*Run)(const LaunchContext&, const Args&, const QueueState&)>
void on_stream(const Args& args, Stream& stream) {
  auto& s = static_cast<XpuStream&>(stream);
  Run(s.launch_context(), args, s.state());
}

void plan_on_stream(const AttentionPlanArgs& args, Stream&) { run_plan_attention(args); }

KernelTable make_table() {
  KernelTable t;
  t.dequantize = on_stream<DequantizeArgs, run_dequantize>;
  t.embedding = on_stream<EmbeddingArgs, run_embedding>;
  t.rms_norm = on_stream<RmsNormArgs, run_rms_norm>;
  t.rope = on_stream<RopeArgs, run_rope>;
  t.linear = on_stream<LinearArgs, run_linear>;
  t.kv_write = on_stream<KvWriteArgs, run_kv_write>;
  t.plan_attention = plan_on_stream;
  t.attention = on_stream<AttentionArgs, run_attention>;
  t.gated_activation = on_stream<GatedActivationArgs, run_gated_activation>;
  t.add = on_stream<AddArgs, run_add>;
  t.scale = on_stream<ScaleArgs, run_scale>;
  t.softcap = on_stream<SoftcapArgs, run_softcap>;
  t.gather_rows = on_stream<GatherRowsArgs, run_gather_rows>;
  t.scatter_add_rows = on_stream<ScatterAddRowsArgs, run_scatter_add_rows>;
  return t;
}

cl_context create_context(const OpenclDevice& device) {
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, cl_context_properties(device.platform), 0};
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(properties, 1, &device.device, nullptr, nullptr, &status);
  check(status, "create context on " + device.name);
  return context;
}

// What the kernels cannot serve is refused when a model is loaded
// (supports, prepare_linear), never mid-request.
class XpuBackend final : public OffloadBackend {
 public:
  XpuBackend(int index, const OpenclDevice& device)
      : index_(index),
        device_(device),
        context_(create_context(device)),
        memory_(device, context_.get()),
        program_(device, context_.get()),
        placeholder_(memory_.allocate(64)),
        launch_{&memory_, &program_, &launch_mutex_, placeholder_},
        stream_(context_.get(), device.device, launch_),
        kernels_(make_table()) {}

  ~XpuBackend() override {
    clFinish(stream_.queue());
    memory_.release(placeholder_);
  }

  Device device() const override { return {DeviceKind("xpu"), index_}; }

  std::string describe() const override {
    const auto total = device_value<cl_ulong>(device_.device, CL_DEVICE_GLOBAL_MEM_SIZE);
    const auto units = device_value<cl_uint>(device_.device, CL_DEVICE_MAX_COMPUTE_UNITS);
    return "xpu:" + std::to_string(index_) + ": " + device_.name + " (" + device_.platform_name + " " + device_.driver_version +
           "), " + std::to_string(total >> 20) + " MiB, " + std::to_string(units) + " compute units, " +
           (device_.memory == MemoryModel::kUsm ? "unified shared memory" : "shared virtual memory") +
           sub_groups_described() + (device_.fp64 ? "" : ", no fp64 (sums in f32)") +
           (program_.loaded_from_cache() ? ", kernels from cache" : "");
  }

  std::string sub_groups_described() const {
    if (device_.sub_group_kernels) return ", Intel sub-groups (decode linears, attention reductions)";
    if (!device_.intel_subgroups) return "";
    return device_.gpu ? ", Intel sub-groups off (TESSERA_XPU_SUB_GROUPS=off)"
                       : ", Intel sub-groups unused on a CPU device (TESSERA_XPU_SUB_GROUPS=on to use them)";
  }

  // Drivers report no free memory: the total less what this backend holds.
  MemoryInfo memory_info() const override {
    const auto total = device_value<cl_ulong>(device_.device, CL_DEVICE_GLOBAL_MEM_SIZE);
    const uint64_t used = memory_.bytes_in_use();
    return {total > used ? total - used : 0, total};
  }

  void* allocate(size_t bytes) override { return memory_.allocate(bytes); }
  void deallocate(void* ptr) override { memory_.release(ptr); }
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& s) override { copy(dst, src, bytes, s); }
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& s) override { copy(dst, src, bytes, s); }
  void fill_zero(void* dst, size_t bytes, Stream& s) override {
    memory_.fill_zero(static_cast<XpuStream&>(s).queue(), dst, bytes);
  }

  std::shared_ptr<const void> place_weights(const void* host, size_t bytes) override {
    void* device = allocate(bytes);
    std::shared_ptr<const void> owned(device, [this](const void* p) { deallocate(const_cast<void*>(p)); });
    copy(device, host, bytes, stream_);
    return owned;
  }

  Stream& default_stream() override { return stream_; }
  std::unique_ptr<Event> create_event() override { return std::make_unique<XpuEvent>(); }

  bool decodes_format(DType dtype) const override { return decodable(dtype); }
  std::string refuse_linear(const QuantizedLinear& weight) const override { return linear_refusal(weight); }

  bool reads_rope_angle_table() const override { return true; }

  const KernelTable& kernels() const override { return kernels_; }

 private:
  void copy(void* dst, const void* src, size_t bytes, Stream& s) {
    memory_.copy(static_cast<XpuStream&>(s).queue(), dst, src, bytes);
  }

  int index_;
  OpenclDevice device_;
  ContextHandle context_;
  DeviceMemory memory_;
  KernelProgram program_;
  void* placeholder_;
  std::mutex launch_mutex_;
  LaunchContext launch_;
  XpuStream stream_;
  KernelTable kernels_;
};

int device_count() { return int(device_inventory().usable.size()); }

std::unique_ptr<Backend> create(int index, const BackendOptions&) {
  const auto& usable = device_inventory().usable;
  if (index < 0 || size_t(index) >= usable.size()) throw Error("xpu:" + std::to_string(index) + ": no such device");
  return std::make_unique<XpuBackend>(index, usable[size_t(index)]);
}

}  // namespace
}  // namespace tessera::xpu

namespace tessera {

BackendFactory xpu_backend_factory() { return {DeviceKind("xpu"), "xpu", xpu::device_count, xpu::create}; }

std::string xpu_unusable_devices() {
  std::string lines;
  for (const std::string& line : xpu::device_inventory().unusable) lines += (lines.empty() ? "" : "\n") + line;
  return lines;
}

}  // namespace tessera
