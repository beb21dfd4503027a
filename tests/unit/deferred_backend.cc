#include "tests/unit/deferred_backend.h"

#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"

namespace tessera::test {
namespace {

class QueueStream final : public Stream {
 public:
  explicit QueueStream(Stream& inner) : inner_(inner) {}
  void synchronize() override {
    for (auto& fn : work_) fn();
    work_.clear();
  }
  void record(Event&) override {}
  void wait(Event&) override {}
  void enqueue(std::function<void()> fn) {
    (recording_ ? *recording_ : work_).push_back(std::move(fn));
    ++queued_;
  }
  // While set, queued work goes to `into` instead, to be replayed later.
  void record_into(std::vector<std::function<void()>>* into) { recording_ = into; }
  Stream& inner() { return inner_; }
  size_t queued() const { return queued_; }

 private:
  Stream& inner_;
  std::vector<std::function<void()>> work_;
  std::vector<std::function<void()>>* recording_ = nullptr;
  size_t queued_ = 0;
};

// Work recorded from the queue: its closures, with the arguments they took
// when recorded, queued again on each replay (as a CUDA graph replays).
class QueueRecording final : public Recording {
 public:
  explicit QueueRecording(size_t& replays) : replays_(replays) {}
  void replay(Stream& stream) override;
  std::vector<std::function<void()>> work;

 private:
  size_t& replays_;
};

// Waiting for a recorded point runs the queue up to it (here: all of it).
class QueueEvent final : public Event {
 public:
  explicit QueueEvent(Stream& stream) : stream_(stream) {}
  void synchronize() override { stream_.synchronize(); }

 private:
  Stream& stream_;
};

QueueStream& queue(Stream& stream) { return static_cast<QueueStream&>(stream); }

void QueueRecording::replay(Stream& stream) {
  for (const auto& fn : work) queue(stream).enqueue(fn);
  ++replays_;
}

template <typename Args>
using OpFn = void (*)(const Args&, Stream&);

// Queues the CPU table's kernel with a copy of the arguments.
template <typename Args, OpFn<Args> KernelTable::*Member>
void deferred(const Args& args, Stream& stream) {
  QueueStream& q = queue(stream);
  q.enqueue([args, &q] { (cpu::cpu_kernel_table().*Member)(args, q.inner()); });
}

// The outputs of a linear op live on the caller's stack: taken at the call,
// as a kernel launch takes its parameters.
void deferred_linear(const LinearArgs& args, Stream& stream) {
  QueueStream& q = queue(stream);
  std::vector<LinearOutput> outputs(args.outputs, args.outputs + args.n_outputs);
  q.enqueue([args, outputs, &q] {
    LinearArgs now = args;
    now.outputs = outputs.data();
    cpu::cpu_kernel_table().linear(now, q.inner());
  });
}

KernelTable make_table() {
  KernelTable t;
  t.dequantize = deferred<DequantizeArgs, &KernelTable::dequantize>;
  t.embedding = deferred<EmbeddingArgs, &KernelTable::embedding>;
  t.rms_norm = deferred<RmsNormArgs, &KernelTable::rms_norm>;
  t.rope = deferred<RopeArgs, &KernelTable::rope>;
  t.linear = deferred_linear;
  t.kv_write = deferred<KvWriteArgs, &KernelTable::kv_write>;
  t.plan_attention = deferred<AttentionPlanArgs, &KernelTable::plan_attention>;
  t.attention = deferred<AttentionArgs, &KernelTable::attention>;
  t.gated_activation = deferred<GatedActivationArgs, &KernelTable::gated_activation>;
  t.add = deferred<AddArgs, &KernelTable::add>;
  t.scale = deferred<ScaleArgs, &KernelTable::scale>;
  t.softcap = deferred<SoftcapArgs, &KernelTable::softcap>;
  t.gather_rows = deferred<GatherRowsArgs, &KernelTable::gather_rows>;
  t.scatter_add_rows = deferred<ScatterAddRowsArgs, &KernelTable::scatter_add_rows>;
  return t;
}

// Allocations are filled with a pattern, so reading one before a kernel or
// copy wrote it gives garbage rather than zeros that might pass.
constexpr uint8_t kPoison = 0x7f;

}  // namespace

DeferredBackend::DeferredBackend(bool records)
    : records_(records), inner_(cpu::CpuBackendOptions{1, cpu::IsaFeatures{}}), stream_(std::make_unique<QueueStream>(inner_.default_stream())) {}

DeferredBackend::~DeferredBackend() { stream_->synchronize(); }

void* DeferredBackend::allocate(size_t bytes) {
  void* p = inner_.allocate(bytes);
  std::memset(p, kPoison, bytes);
  return p;
}

void DeferredBackend::deallocate(void* ptr) { inner_.deallocate(ptr); }

void DeferredBackend::copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) {
  auto staged = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
  queue(stream).enqueue([dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
}

void DeferredBackend::copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) {
  queue(stream).enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

void DeferredBackend::fill_zero(void* dst, size_t bytes, Stream& stream) {
  queue(stream).enqueue([dst, bytes] { std::memset(dst, 0, bytes); });
}

std::shared_ptr<const void> DeferredBackend::place_weights(const void* host, size_t bytes) {
  void* copy = allocate(bytes);
  std::memcpy(copy, host, bytes);
  return std::shared_ptr<const void>(copy, [this](const void* p) { deallocate(const_cast<void*>(p)); });
}

Stream& DeferredBackend::default_stream() { return *stream_; }

std::unique_ptr<Recording> DeferredBackend::record(Stream& stream, const std::function<void()>& enqueue) {
  if (!records_) return nullptr;
  auto recording = std::make_unique<QueueRecording>(replays_);
  queue(stream).record_into(&recording->work);
  try {
    enqueue();
  } catch (...) {
    queue(stream).record_into(nullptr);
    throw;
  }
  queue(stream).record_into(nullptr);
  ++recordings_;
  return recording;
}

std::unique_ptr<Event> DeferredBackend::create_event() { return std::make_unique<QueueEvent>(*stream_); }

const KernelTable& DeferredBackend::kernels() const {
  static const KernelTable table = make_table();  // immutable after construction
  return table;
}

// The weight's bytes (and bias) copied into this backend's memory, then
// prepared by the portable CPU kernels.
std::unique_ptr<PreparedLinear> DeferredBackend::prepare_linear(const QuantizedLinear& weight) {
  QuantizedLinear copy = weight;
  weight_copies_.push_back(place_weights(weight.data, size_t(weight.rows) * weight.row_stride));
  copy.data = weight_copies_.back().get();
  if (weight.bias) {
    weight_copies_.push_back(place_weights(weight.bias, size_t(weight.rows) * sizeof(float)));
    copy.bias = static_cast<const float*>(weight_copies_.back().get());
  }
  return inner_.prepare_linear(copy);
}

size_t DeferredBackend::queued_ops() const { return static_cast<const QueueStream&>(*stream_).queued(); }

}  // namespace tessera::test
