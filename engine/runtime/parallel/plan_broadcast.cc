#include "engine/runtime/parallel/plan_broadcast.h"

#include "engine/core/error.h"
#include "engine/runtime/step_plan_codec.h"

namespace tessera {

namespace {

constexpr uint64_t kMaxPlanBytes = uint64_t(1) << 30;
constexpr uint64_t kStop = 0;
constexpr uint64_t kHeartbeat = ~uint64_t(0);

}  // namespace

void broadcast_plan(Communicator& comm, const StepPlan& plan, Stream& stream) {
  std::vector<uint8_t> bytes = encode_step_plan(plan);
  uint64_t size = bytes.size();
  comm.broadcast(&size, sizeof(size), 0, stream);
  comm.broadcast(bytes.data(), bytes.size(), 0, stream);
}

void broadcast_stop(Communicator& comm, Stream& stream) {
  uint64_t size = kStop;
  comm.broadcast(&size, sizeof(size), 0, stream);
}

void broadcast_heartbeat(Communicator& comm, Stream& stream) {
  uint64_t size = kHeartbeat;
  comm.broadcast(&size, sizeof(size), 0, stream);
  comm.barrier();
}

std::optional<StepPlan> receive_plan(Communicator& comm, Stream& stream) {
  // While rank 0 has work its next plan follows its sampling within tens
  // of microseconds: the follower spins for it, as waking a sleeping core
  // costs hundreds (0.5 to 0.7 ms of SmolLM2's 9.3 ms tensor-parallel
  // decode step on a 2-vCPU VM). Rank 0 sends a heartbeat as soon as it
  // runs out of work; from then on the follower sleeps until a plan comes.
  uint64_t size = kHeartbeat;
  comm.broadcast(&size, sizeof(size), 0, stream);
  while (size == kHeartbeat) {
    comm.barrier();
    comm.set_busy_wait(false);
    comm.broadcast(&size, sizeof(size), 0, stream);
  }
  comm.set_busy_wait(true);
  if (size == kStop) return std::nullopt;
  if (size > kMaxPlanBytes) throw Error("step plan of " + std::to_string(size) + " bytes from rank 0 is too large");
  std::vector<uint8_t> bytes(size);
  comm.broadcast(bytes.data(), bytes.size(), 0, stream);
  return decode_step_plan(bytes);
}

}  // namespace tessera
