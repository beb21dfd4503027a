#pragma once
// This process's rank in the parallel group (tensor or context) of every
// served model.
// Rank 0 (the serving process) serves the rendezvous store at the leader's
// address and publishes the models and parallel settings there; the other
// ranks read them back, so every rank loads the same thing. Model i of the
// list meets as group "model.i" of that store, with a communicator of its
// own (each model's loop runs on its own thread).
//
// The communicators live here, with their flight recorders, which are
// written out as one JSON file per model and rank on demand: on a failed
// collective, on SIGUSR1, or for the admin endpoint.
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "kernels/backend.h"
#include "kernels/comm/communicator.h"
#include "models/decoder_weights.h"

namespace tessera {

class ParallelRanks {
 public:
  // Rank 0: serves the store at config.parallel.leader (which must be set),
  // open to holders of `secret`, and publishes config's models there.
  static std::unique_ptr<ParallelRanks> lead(const Config& config, const std::string& secret);
  // Ranks 1…world-1: joins the store at `leader` (HOST:PORT) with the
  // group's `secret`, waiting for it up to `join_timeout`, and reads what
  // rank 0 published.
  static std::unique_ptr<ParallelRanks> follow(int rank, int world, const std::string& leader,
                                               std::chrono::milliseconds join_timeout, const std::string& secret);
  ~ParallelRanks();

  int rank() const { return rank_; }
  int world() const { return world_; }
  // Rank 0: the config given; other ranks: what rank 0 published.
  const Config& config() const { return config_; }
  // The weights this rank loads: its shard, or the whole model.
  TensorRank tensor_rank() const;

  // Joins model `index`'s group, blocking until every rank has. The
  // communicator stays owned here.
  Communicator* join(size_t index, Backend& backend, const std::string& model_name);

  // {"rank", "world", "models": {name: flight recorder}}.
  nlohmann::json recorders_json() const;
  // Writes each group's recorder to DIR/collectives.MODEL.rankR.json with
  // `reason`; returns the paths written. Never throws.
  std::vector<std::string> dump(const std::string& reason) const;

 private:
  ParallelRanks(int rank, int world, Config config, std::shared_ptr<RendezvousStore> store);

  struct Group {
    std::string model;
    std::unique_ptr<Communicator> comm;
  };

  int rank_;
  int world_;
  Config config_;
  std::shared_ptr<RendezvousStore> store_;
  mutable std::mutex mutex_;  // groups_ grows while a dump may read it
  std::vector<Group> groups_;
};

}  // namespace tessera
