#include "kernels/comm/collective_recorder.h"

#include <nlohmann/json.hpp>

namespace tessera {

namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string_view collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kSend: return "send";
    case CollectiveOp::kRecv: return "recv";
    case CollectiveOp::kBarrier: return "barrier";
  }
  return "unknown";
}

std::string_view collective_state_name(CollectiveState state) {
  switch (state) {
    case CollectiveState::kStarted: return "started";
    case CollectiveState::kCompleted: return "completed";
    case CollectiveState::kFailed: return "failed";
  }
  return "unknown";
}

CollectiveRecorder::CollectiveRecorder(int rank, int world, size_t capacity)
    : rank_(rank), world_(world), capacity_(capacity == 0 ? 1 : capacity) {
  ring_.reserve(capacity_);
}

uint64_t CollectiveRecorder::start(CollectiveOp op, uint64_t bytes, int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  CollectiveRecord r;
  r.seq = next_seq_++;
  r.op = op;
  r.bytes = bytes;
  r.peer = peer;
  r.start_us = now_us();
  if (ring_.size() < capacity_) ring_.push_back(std::move(r));
  else ring_[(r.seq - 1) % capacity_] = std::move(r);
  return next_seq_ - 1;
}

void CollectiveRecorder::finish(uint64_t seq, CollectiveState state, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  CollectiveRecord& r = ring_[(seq - 1) % capacity_];
  if (r.seq != seq) return;  // overwritten: the ring has moved on
  r.end_us = now_us();
  r.state = state;
  r.error = error;
}

std::vector<CollectiveRecord> CollectiveRecorder::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CollectiveRecord> out;
  out.reserve(ring_.size());
  // Slot (seq - 1) % capacity: the oldest record sits just after the newest.
  const size_t first = ring_.size() < capacity_ ? 0 : size_t((next_seq_ - 1) % capacity_);
  for (size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(first + i) % ring_.size()]);
  return out;
}

std::string CollectiveRecorder::dump_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const CollectiveRecord& r : records()) {
    nlohmann::json item = {{"seq", r.seq},         {"op", collective_op_name(r.op)}, {"bytes", r.bytes},
                           {"peer", r.peer},       {"start_us", r.start_us},        {"end_us", r.end_us},
                           {"state", collective_state_name(r.state)}};
    if (!r.error.empty()) item["error"] = r.error;
    list.push_back(std::move(item));
  }
  return nlohmann::json{{"rank", rank_}, {"world", world_}, {"collectives", std::move(list)}}.dump(1);
}

}  // namespace tessera
