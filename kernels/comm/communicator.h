#pragma once
// Collectives between the ranks of one parallel group. A backend chooses the
// transport (gloo over TCP for host memory, NCCL for CUDA devices); this
// class gives every transport the same contract: each call has a deadline
// and is written to a flight recorder before it starts and after it ends,
// so a hang or a dead peer can be traced to the collective and the rank.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/comm/collective_recorder.h"
#include "kernels/comm/rendezvous_store.h"

namespace tessera {

class Stream;

// Where the ranks meet and how long a collective may take.
struct CommunicatorOptions {
  int rank = 0;
  int world = 1;
  // "file:DIR" (ranks on one machine, or a shared file system) or
  // "tcp:HOST:PORT" (a store served by rank 0 at that address).
  std::string rendezvous;
  // When set, the ranks meet through this store instead of opening one at
  // `rendezvous`, each group under its own name: one store serves every
  // group of a process. `rendezvous` still names the store's address, from
  // which the transport picks the interface its peers reach.
  std::shared_ptr<RendezvousStore> store;
  std::string rendezvous_secret;  // for a tcp: rendezvous opened here
  std::string group = "tessera";
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds join_timeout{0};  // for every rank to join; 0: `timeout`
  size_t recorder_capacity = 1024;  // collectives kept by the flight recorder
};

// A collective that failed: a peer closed, or the deadline passed.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  explicit Communicator(const CommunicatorOptions& options);
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const CollectiveRecorder& recorder() const { return recorder_; }

  // Each waits for the work queued on `stream` that produced its input, and
  // throws CollectiveError naming the op on failure or timeout.
  // data (count) f32: replaced by the sum over ranks.
  void all_reduce_sum(float* data, size_t count, Stream& stream);
  // in (bytes) from each rank → out (world, bytes), rank order.
  void all_gather(const void* in, size_t bytes, void* out, Stream& stream);
  // in (world, count) f32 summed over ranks; this rank keeps its slice in out (count).
  void reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream);
  // data (bytes): root's copy everywhere.
  void broadcast(void* data, size_t bytes, int root, Stream& stream);
  // A send may block until the peer receives: two ranks must not send each
  // other more than ~64 KiB at once before receiving.
  void send(const void* data, size_t bytes, int peer, Stream& stream);
  void recv(void* data, size_t bytes, int peer, Stream& stream);
  void barrier();
  // Whether a rank waiting for its peers spins on the CPU (lowest latency,
  // for the collectives inside a step) or sleeps in the kernel (for waits
  // of unknown length, such as a follower waiting for the next plan).
  void set_busy_wait(bool on) { apply_busy_wait(on); }

 protected:
  virtual void run_all_reduce_sum(float* data, size_t count, Stream& stream) = 0;
  virtual void run_all_gather(const void* in, size_t bytes, void* out, Stream& stream) = 0;
  virtual void run_reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream) = 0;
  virtual void run_broadcast(void* data, size_t bytes, int root, Stream& stream) = 0;
  virtual void run_send(const void* data, size_t bytes, int peer, Stream& stream) = 0;
  virtual void run_recv(void* data, size_t bytes, int peer, Stream& stream) = 0;
  virtual void run_barrier() = 0;
  virtual void apply_busy_wait(bool) {}

 private:
  template <class Run>
  void recorded(CollectiveOp op, uint64_t bytes, int peer, const Run& run);

  int rank_;
  int world_;
  std::chrono::milliseconds timeout_;
  CollectiveRecorder recorder_;
};

}  // namespace tessera
