#include "engine/parallel/plan_broadcast.h"

#include "engine/error.h"
#include "engine/step_plan_codec.h"

namespace tessera {

namespace {

constexpr uint64_t kMaxPlanBytes = uint64_t(1) << 30;

}  // namespace

void broadcast_plan(Communicator& comm, const StepPlan& plan, Stream& stream) {
  std::vector<uint8_t> bytes = encode_step_plan(plan);
  uint64_t size = bytes.size();
  comm.broadcast(&size, sizeof(size), 0, stream);
  comm.broadcast(bytes.data(), bytes.size(), 0, stream);
}

void broadcast_stop(Communicator& comm, Stream& stream) {
  uint64_t size = 0;
  comm.broadcast(&size, sizeof(size), 0, stream);
}

std::optional<StepPlan> receive_plan(Communicator& comm, Stream& stream) {
  uint64_t size = 0;
  comm.broadcast(&size, sizeof(size), 0, stream);
  if (size == 0) return std::nullopt;
  if (size > kMaxPlanBytes) throw Error("step plan of " + std::to_string(size) + " bytes from rank 0 is too large");
  std::vector<uint8_t> bytes(size);
  comm.broadcast(bytes.data(), bytes.size(), 0, stream);
  return decode_step_plan(bytes);
}

}  // namespace tessera
