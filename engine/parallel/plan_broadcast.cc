#include "engine/parallel/plan_broadcast.h"

#include "engine/error.h"
#include "engine/step_plan_codec.h"

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
  uint64_t size = kHeartbeat;
  // Idle for as long as rank 0 has no work: sleep until the plan comes,
  // then spin through the step's collectives.
  comm.set_busy_wait(false);
  while (size == kHeartbeat) {
    comm.broadcast(&size, sizeof(size), 0, stream);
    if (size == kHeartbeat) comm.barrier();
  }
  comm.set_busy_wait(true);
  if (size == kStop) return std::nullopt;
  if (size > kMaxPlanBytes) throw Error("step plan of " + std::to_string(size) + " bytes from rank 0 is too large");
  std::vector<uint8_t> bytes(size);
  comm.broadcast(bytes.data(), bytes.size(), 0, stream);
  return decode_step_plan(bytes);
}

}  // namespace tessera
