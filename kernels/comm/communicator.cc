#include "kernels/comm/communicator.h"

#include "engine/core/stream.h"

namespace tessera {

Communicator::Communicator(const CommunicatorOptions& options)
    : rank_(options.rank),
      world_(options.world),
      timeout_(options.timeout),
      recorder_(options.rank, options.world, options.recorder_capacity) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world) {
    throw CollectiveError("communicator: rank " + std::to_string(options.rank) + " outside a world of " +
                          std::to_string(options.world));
  }
  if (options.timeout.count() <= 0) throw CollectiveError("communicator: the collective timeout must be positive");
}

Communicator::~Communicator() = default;

template <class Run>
void Communicator::recorded(CollectiveOp op, uint64_t bytes, int peer, const Run& run) {
  const uint64_t seq = recorder_.start(op, bytes, peer);
  try {
    run();
  } catch (const std::exception& e) {
    const std::string what = std::string(collective_op_name(op)) + " #" + std::to_string(seq) + " of " +
                             std::to_string(bytes) + " bytes on rank " + std::to_string(rank_) + " failed: " + e.what();
    recorder_.finish(seq, CollectiveState::kFailed, e.what());
    throw CollectiveError(what);
  }
  recorder_.finish(seq, CollectiveState::kCompleted);
}

void Communicator::all_reduce_sum(float* data, size_t count, Stream& stream) {
  recorded(CollectiveOp::kAllReduce, count * sizeof(float), -1, [&] { run_all_reduce_sum(data, count, stream); });
}

void Communicator::all_gather(const void* in, size_t bytes, void* out, Stream& stream) {
  recorded(CollectiveOp::kAllGather, bytes, -1, [&] { run_all_gather(in, bytes, out, stream); });
}

void Communicator::reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream) {
  recorded(CollectiveOp::kReduceScatter, count * sizeof(float), -1, [&] { run_reduce_scatter_sum(in, out, count, stream); });
}

void Communicator::broadcast(void* data, size_t bytes, int root, Stream& stream) {
  recorded(CollectiveOp::kBroadcast, bytes, root, [&] { run_broadcast(data, bytes, root, stream); });
}

void Communicator::send(const void* data, size_t bytes, int peer, Stream& stream) {
  recorded(CollectiveOp::kSend, bytes, peer, [&] { run_send(data, bytes, peer, stream); });
}

void Communicator::recv(void* data, size_t bytes, int peer, Stream& stream) {
  recorded(CollectiveOp::kRecv, bytes, peer, [&] { run_recv(data, bytes, peer, stream); });
}

void Communicator::barrier() {
  recorded(CollectiveOp::kBarrier, 0, -1, [&] { run_barrier(); });
}

}  // namespace tessera
