#include "models/kv_ring.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"

namespace tessera {

void KvRing::exchange(Backend& backend, Stream& stream, const ContextShare& share, const float* k, const float* v,
                      const KvWriteArgs& cache) {
  const int world = comm_.world(), rank = comm_.rank();
  if (world < 2) return;
  if (int(share.counts.size()) != world || int(share.slots.size()) != world) {
    throw Error("context parallelism: the step's shares do not match the group of " + std::to_string(world));
  }
  const int64_t row = cache.row;
  const int64_t widest = *std::max_element(share.counts.begin(), share.counts.end());
  const size_t bytes = size_t(widest) * size_t(row) * 2 * sizeof(float);
  for (DeviceBuffer* b : {&outgoing_, &incoming_}) {
    if (b->size() < bytes) *b = DeviceBuffer(backend, bytes);
  }
  const KernelTable& ops = backend.kernels();
  float* own = outgoing_.data_as<float>();
  ops.gather_rows({k, row, share.own_rows, share.n_own, own}, stream);
  ops.gather_rows({v, row, share.own_rows, share.n_own, own + share.n_own * row}, stream);
  int origin = rank;  // whose tokens `outgoing_` holds
  for (int hop = 1; hop < world; ++hop) {
    const int from = (rank - hop + world) % world;
    const int64_t n = share.counts[size_t(from)];
    pass_on(share.counts[size_t(origin)], n, row, stream);
    const float* keys = incoming_.data_as<float>();
    KvWriteArgs write = cache;
    write.slots = share.slots[size_t(from)];
    write.n_tokens = n;
    write.k = keys;
    write.v = keys + n * row;
    if (n > 0) ops.kv_write(write, stream);
    std::swap(outgoing_, incoming_);
    origin = from;
  }
}

void KvRing::pass_on(int64_t send_count, int64_t recv_count, int64_t row, Stream& stream) {
  const int world = comm_.world(), rank = comm_.rank();
  const int next = (rank + 1) % world, prev = (rank - 1 + world) % world;
  const size_t send_bytes = size_t(send_count * row) * 2 * sizeof(float), recv_bytes = size_t(recv_count * row) * 2 * sizeof(float);
  // Even ranks send first and odd ranks receive first, so no two ranks
  // block sending to each other, whatever the size.
  auto send = [&] {
    if (send_bytes > 0) comm_.send(outgoing_.data(), send_bytes, next, stream);
  };
  auto recv = [&] {
    if (recv_bytes > 0) comm_.recv(incoming_.data(), recv_bytes, prev, stream);
  };
  if (rank % 2 == 0) {
    send();
    recv();
  } else {
    recv();
    send();
  }
}

}  // namespace tessera
