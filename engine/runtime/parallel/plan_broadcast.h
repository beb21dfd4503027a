#pragma once
// Rank 0 of a tensor-parallel group sends each step plan to the others
// before running it, as the encoded plan behind its length. Two lengths
// are signals: zero tells the followers to stop, and the heartbeat (sent
// when rank 0 runs out of work and then while it has none, each met by a
// barrier) shows every rank is alive, so a dead or hung rank is found while
// idle too. Followers spin for the next plan until a heartbeat, then sleep.
#include <optional>

#include "engine/runtime/step_plan.h"
#include "kernels/comm/communicator.h"

namespace tessera {

class Stream;

void broadcast_plan(Communicator& comm, const StepPlan& plan, Stream& stream);
void broadcast_stop(Communicator& comm, Stream& stream);
void broadcast_heartbeat(Communicator& comm, Stream& stream);
// On a follower: the next plan (answering heartbeats while it waits), or
// nullopt once rank 0 stops.
std::optional<StepPlan> receive_plan(Communicator& comm, Stream& stream);

}  // namespace tessera
