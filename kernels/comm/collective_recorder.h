#pragma once
// The flight recorder of one rank: the last N collectives it started, with
// their sequence number, size, peer and times, and whether each finished.
// Every rank numbers its collectives the same way, so comparing the dumps
// of all ranks names the first collective one of them never reached or
// never finished (`tessera trace-collectives`).
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tessera {

enum class CollectiveOp : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kSend, kRecv, kBarrier };
enum class CollectiveState : uint8_t { kStarted, kCompleted, kFailed };

std::string_view collective_op_name(CollectiveOp op);
std::string_view collective_state_name(CollectiveState state);

struct CollectiveRecord {
  uint64_t seq = 0;  // 1 for the rank's first collective
  CollectiveOp op = CollectiveOp::kBarrier;
  uint64_t bytes = 0;
  int peer = -1;  // root of a broadcast, peer of send/recv; -1 otherwise
  int64_t start_us = 0;  // microseconds since the epoch (system clock)
  int64_t end_us = 0;    // 0 while started
  CollectiveState state = CollectiveState::kStarted;
  std::string error;
};

class CollectiveRecorder {
 public:
  CollectiveRecorder(int rank, int world, size_t capacity);

  // Returns the new record's sequence number.
  uint64_t start(CollectiveOp op, uint64_t bytes, int peer);
  void finish(uint64_t seq, CollectiveState state, const std::string& error = {});

  // Oldest first.
  std::vector<CollectiveRecord> records() const;
  // One JSON document: {"rank", "world", "collectives": [...]}.
  std::string dump_json() const;

 private:
  int rank_;
  int world_;
  size_t capacity_;
  mutable std::mutex mutex_;  // the signal-dump thread reads while the engine writes
  std::vector<CollectiveRecord> ring_;
  uint64_t next_seq_ = 1;
};

}  // namespace tessera
