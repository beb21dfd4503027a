#pragma once
// Collectives over gloo's TCP transport, for ranks whose buffers live in
// host memory (the CPU backend). The ranks meet through a gloo store: a
// directory every rank can reach ("file:DIR"), or the TCP store rank 0
// serves ("tcp:HOST:PORT").
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/comm/communicator.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace tessera::cpu {

class GlooCommunicator final : public Communicator {
 public:
  // Blocks until every rank has joined, or the timeout passes (throws CollectiveError).
  explicit GlooCommunicator(const CommunicatorOptions& options);
  ~GlooCommunicator() override;

 protected:
  void run_all_reduce_sum(float* data, size_t count, Stream& stream) override;
  void run_all_gather(const void* in, size_t bytes, void* out, Stream& stream) override;
  void run_reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream) override;
  void run_broadcast(void* data, size_t bytes, int root, Stream& stream) override;
  void run_send(const void* data, size_t bytes, int peer, Stream& stream) override;
  void run_recv(void* data, size_t bytes, int peer, Stream& stream) override;
  void run_barrier() override;
  void apply_busy_wait(bool on) override;

 private:
  // Point-to-point slots: (sender, receiver, count) in a space of their own.
  int p2p_slot(int from, int to, uint64_t count) const;
  void exchange_chunk(const uint8_t* chunk, size_t n, uint8_t* dst, size_t stride);

  std::shared_ptr<RendezvousStore> store_;  // kept: a TCP store's server may live in this rank
  std::shared_ptr<gloo::Context> context_;
  std::vector<uint64_t> sent_, received_;  // (world): messages to and from each peer
  std::vector<float> reduce_scratch_;  // (world, count): reduce-scatter's staging
};

}  // namespace tessera::cpu
