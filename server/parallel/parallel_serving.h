#pragma once
// The serving process's part in tensor parallelism: rank 0 of every
// model's group, and the supervisor of the workers it starts on this
// machine. A broken group (a failed collective, or a worker that exited)
// writes the flight recorders and raises SIGUSR2, on which `serve` exits
// non-zero. Inactive with one rank (parallel.tensor and parallel.context 1).
#include <memory>
#include <string>

#include "config/config.h"
#include "scheduler/model_loop.h"
#include "server/parallel/parallel_ranks.h"
#include "server/parallel/worker_processes.h"

namespace tessera {

class ParallelServing {
 public:
  // Settles what the workers need before they start (a free loopback port
  // when no leader address is set; each spawned rank's share of the cores
  // when a model asks for all of them) and opens the rendezvous store.
  explicit ParallelServing(Config& config);
  ~ParallelServing();

  ParallelRanks* ranks() const { return ranks_.get(); }
  void start_workers();
  // For ModelRegistry::load; empty when inactive.
  ModelLoop::FaultListener fault_listener() const;
  void dump(const std::string& reason) const;
  // Lets released workers exit within `grace_ms`, then ends the rest.
  void stop_workers(int grace_ms);
  std::string describe() const;

 private:
  void worker_exited(int rank, int status) const;

  ParallelConfig settings_;
  std::string secret_;  // the group's rendezvous secret, handed to spawned workers by environment
  std::unique_ptr<ParallelRanks> ranks_;
  std::unique_ptr<WorkerProcesses> workers_;
};

}  // namespace tessera
