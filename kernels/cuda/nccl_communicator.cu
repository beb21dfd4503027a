#include "kernels/cuda/nccl_communicator.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cuda/gpu_runtime.h"

#if defined(__HIP_PLATFORM_AMD__) || defined(TESSERA_HIP)
#include <rccl/rccl.h>
#else
#include <nccl.h>
#endif

namespace tessera::gpu {

cudaStream_t stream_handle(Stream& stream);  // kernels/cuda/cuda_backend.cu

namespace {

using Clock = std::chrono::steady_clock;

// A non-blocking NCCL communicator: every call returns at once and this
// class waits for it with a deadline, aborting the communicator when the
// deadline passes or NCCL reports an error, so no rank hangs on a dead
// peer. Each collective is waited for before the next starts: its flight
// recorder entry ends when the data has arrived.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const CommunicatorOptions& options, int device) : Communicator(options), device_(device) {
    check(cudaSetDevice(device), "set device");
    std::shared_ptr<RendezvousStore> store =
        options.store ? options.store : open_rendezvous_store(options.rendezvous, options.rank == 0, join_timeout(options), options.rendezvous_secret);
    const std::string key = options.group + "/nccl_unique_id";
    ncclUniqueId id;
    if (options.rank == 0) {
      ok(ncclGetUniqueId(&id), "create the group's id");
      store->set(key, std::vector<char>(id.internal, id.internal + sizeof(id.internal)));
    } else {
      const std::vector<char> bytes = store->get(key, join_timeout(options));
      if (bytes.size() != sizeof(id.internal)) throw CollectiveError("nccl: the group's id in the store is malformed");
      std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ok(ncclCommInitRankConfig(&comm_, options.world, id, options.rank, &config), "join the group");
    settle("join the group", join_timeout(options));
    scratch_ = allocate_scratch();
  }

  ~NcclCommunicator() override {
    if (comm_) release();
    if (barrier_stream_) cudaStreamDestroy(barrier_stream_);
    if (scratch_) cudaFree(scratch_);
  }

 protected:
  void run_all_reduce_sum(float* data, size_t count, Stream& stream) override {
    run("all_reduce", stream, [&](cudaStream_t s) { return ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_, s); });
  }
  void run_all_gather(const void* in, size_t bytes, void* out, Stream& stream) override {
    run("all_gather", stream, [&](cudaStream_t s) { return ncclAllGather(in, out, bytes, ncclUint8, comm_, s); });
  }
  void run_reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream) override {
    run("reduce_scatter", stream,
        [&](cudaStream_t s) { return ncclReduceScatter(in, out, count, ncclFloat32, ncclSum, comm_, s); });
  }
  void run_broadcast(void* data, size_t bytes, int root, Stream& stream) override {
    run("broadcast", stream, [&](cudaStream_t s) { return ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, s); });
  }
  void run_send(const void* data, size_t bytes, int peer, Stream& stream) override {
    run("send", stream, [&](cudaStream_t s) { return ncclSend(data, bytes, ncclUint8, peer, comm_, s); });
  }
  void run_recv(void* data, size_t bytes, int peer, Stream& stream) override {
    run("recv", stream, [&](cudaStream_t s) { return ncclRecv(data, bytes, ncclUint8, peer, comm_, s); });
  }
  // NCCL has no barrier: a one-value all-reduce every rank must join.
  void run_barrier() override {
    cudaStream_t s = barrier_stream();
    ok(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, s), "barrier");
    wait_for(s, "barrier");
  }

 private:
  static std::chrono::milliseconds join_timeout(const CommunicatorOptions& o) {
    return o.join_timeout.count() > 0 ? o.join_timeout : o.timeout;
  }

  template <class Call>
  void run(const char* what, Stream& stream, const Call& call) {
    if (!comm_) throw CollectiveError(std::string("nccl: ") + what + ": the group was aborted by an earlier failure");
    check(cudaSetDevice(device_), "set device");
    const cudaStream_t s = stream_handle(stream);
    ok(call(s), what);
    wait_for(s, what);
  }

  // An immediate error from a call; ncclInProgress is the non-blocking
  // communicator still queueing, which wait_for sees through.
  void ok(ncclResult_t result, const char* what) {
    if (result == ncclSuccess || result == ncclInProgress) return;
    fail(what, ncclGetErrorString(result));
  }

  // Until the communicator has no call in progress.
  void settle(const char* what, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(what, ncclGetErrorString(state));
      if (Clock::now() > deadline) fail(what, "timed out");
      std::this_thread::yield();
    }
  }

  // Until the stream's work (the collective included) is done.
  void wait_for(cudaStream_t s, const char* what) {
    const auto deadline = Clock::now() + timeout();
    settle(what, timeout());
    for (;;) {
      const cudaError_t state = cudaStreamQuery(s);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) fail(what, cudaGetErrorString(state));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail(what, ncclGetErrorString(async));
      if (Clock::now() > deadline) fail(what, "timed out");
      std::this_thread::yield();
    }
  }

  // Aborts the communicator (the peers' calls then fail too) and throws.
  [[noreturn]] void fail(const char* what, const std::string& why) {
    if (comm_) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    throw CollectiveError(std::string("nccl: ") + what + " (rank " + std::to_string(rank()) + " of " + std::to_string(world()) +
                          "): " + why);
  }

  // Finalizes the communicator, waiting a moment for the peers to do the
  // same; aborts it when they do not. Never throws.
  void release() {
    ncclResult_t state = ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (state == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::yield();
      ncclCommGetAsyncError(comm_, &state);
    }
    if (state == ncclSuccess) ncclCommDestroy(comm_);
    else ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  float* allocate_scratch() {
    void* p = nullptr;
    check(cudaMalloc(&p, sizeof(float)), "allocate the barrier's value");
    return static_cast<float*>(p);
  }

  cudaStream_t barrier_stream() {
    if (!barrier_stream_) check(cudaStreamCreateWithFlags(&barrier_stream_, cudaStreamNonBlocking), "create stream");
    return barrier_stream_;
  }

  int device_;
  ncclComm_t comm_ = nullptr;
  float* scratch_ = nullptr;           // (1) f32: the barrier's all-reduce
  cudaStream_t barrier_stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> create_nccl_communicator(const CommunicatorOptions& options, int device) {
  return std::make_unique<NcclCommunicator>(options, device);
}

}  // namespace tessera::gpu
