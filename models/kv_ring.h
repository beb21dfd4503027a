#pragma once
// Context parallelism inside a layer: the keys and values each rank
// computed for its share of the split prefills go around the ring of ranks
// (each sends to the next and receives from the one before, world − 1
// hops) and are written into every rank's paged cache. Each rank's queries
// then meet every key before them through the paged attention kernel, and
// decode later reads the cache as after any prefill.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace tessera {

// What a step's split prefills ask of the ring, in device memory where a
// kernel reads it.
struct ContextShare {
  int64_t n_own = 0;
  const int32_t* own_rows = nullptr;  // (n_own): this rank's split tokens, as rows of its batch
  std::vector<int64_t> counts;        // (world): split tokens each rank computes
  std::vector<const int64_t*> slots;  // (world): each rank's tokens' cache slots, (counts[r]) each
};

class KvRing {
 public:
  explicit KvRing(Communicator& comm) : comm_(comm) {}

  // `k` and `v` are (batch tokens, cache.row) f32: this rank's keys and
  // values, already in its cache. Writes every other rank's into the cache
  // `cache` names (its slots, count and sources are set here).
  void exchange(Backend& backend, Stream& stream, const ContextShare& share, const float* k, const float* v,
                const KvWriteArgs& cache);

 private:
  // Keys then values of `count` tokens, each (count, row) f32.
  void pass_on(int64_t send_count, int64_t recv_count, int64_t row, Stream& stream);

  Communicator& comm_;
  DeviceBuffer outgoing_, incoming_;
};

}  // namespace tessera
