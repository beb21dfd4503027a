#pragma once
// Rank 0 of a tensor-parallel group sends each step plan to the others
// before running it, as the encoded plan behind its length; a length of
// zero tells the followers to stop.
#include <optional>

#include "engine/step_plan.h"
#include "kernels/communicator.h"

namespace tessera {

class Stream;

void broadcast_plan(Communicator& comm, const StepPlan& plan, Stream& stream);
void broadcast_stop(Communicator& comm, Stream& stream);
// On a follower: the next plan, or nullopt once rank 0 stops.
std::optional<StepPlan> receive_plan(Communicator& comm, Stream& stream);

}  // namespace tessera
