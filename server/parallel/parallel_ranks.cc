#include "server/parallel/parallel_ranks.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"

namespace tessera {
namespace {

constexpr const char* kConfigKey = "tessera/config";

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(int64_t(seconds * 1000.0)); }

// Keeps model names usable as file names.
std::string file_safe(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out;
}

}  // namespace

ParallelRanks::ParallelRanks(int rank, int world, Config config, std::shared_ptr<RendezvousStore> store)
    : rank_(rank), world_(world), config_(std::move(config)), store_(std::move(store)) {}

ParallelRanks::~ParallelRanks() = default;

std::unique_ptr<ParallelRanks> ParallelRanks::lead(const Config& config, const std::string& secret) {
  const ParallelConfig& p = config.parallel;
  if (p.leader.empty()) throw Error("parallel ranks need the leader's address (parallel.leader)");
  auto store = open_rendezvous_store("tcp:" + p.leader, true, millis(p.join_timeout_s), secret);
  const std::string text = models_to_json(config);
  store->set(kConfigKey, std::vector<char>(text.begin(), text.end()));
  return std::unique_ptr<ParallelRanks>(new ParallelRanks(0, p.world(), config, std::move(store)));
}

std::unique_ptr<ParallelRanks> ParallelRanks::follow(int rank, int world, const std::string& leader,
                                                     std::chrono::milliseconds join_timeout, const std::string& secret) {
  if (world < 2 || rank < 1 || rank >= world) {
    throw Error("worker rank " + std::to_string(rank) + " must lie in 1.." + std::to_string(world - 1) + " of a world of " +
                std::to_string(world));
  }
  auto store = open_rendezvous_store("tcp:" + leader, false, join_timeout, secret);
  const std::vector<char> text = store->get(kConfigKey, join_timeout);
  Config config = parse_config(std::string(text.begin(), text.end()), "the configuration from leader " + leader);
  config.parallel.leader = leader;  // as this rank reaches it
  if (config.parallel.world() != world) {
    throw Error("this worker was started for a world of " + std::to_string(world) + " ranks; the leader at " + leader +
                " runs " + std::to_string(config.parallel.world()));
  }
  return std::unique_ptr<ParallelRanks>(new ParallelRanks(rank, world, std::move(config), std::move(store)));
}

TensorRank ParallelRanks::tensor_rank() const {
  if (config_.parallel.tensor <= 1) return TensorRank{};  // context parallelism: whole weights on every rank
  const TensorParallelLayout layout =
      config_.parallel.layout == "all_reduce" ? TensorParallelLayout::kAllReduce : TensorParallelLayout::kExact;
  return TensorRank{rank_, world_, layout};
}

Communicator* ParallelRanks::join(size_t index, Backend& backend, const std::string& model_name) {
  CommunicatorOptions options;
  options.rank = rank_;
  options.world = world_;
  options.store = store_;
  // Where the store is also tells the transport which interface peers reach.
  options.rendezvous = "tcp:" + config_.parallel.leader;
  options.group = "model." + std::to_string(index);
  options.timeout = millis(config_.parallel.collective_timeout_s);
  options.join_timeout = millis(config_.parallel.join_timeout_s);
  options.recorder_capacity = size_t(config_.parallel.flight_recorder_entries);
  std::unique_ptr<Communicator> comm = backend.create_communicator(options);
  std::lock_guard lock(mutex_);
  groups_.push_back({model_name, std::move(comm)});
  return groups_.back().comm.get();
}

nlohmann::json ParallelRanks::recorders_json() const {
  nlohmann::json models = nlohmann::json::object();
  std::lock_guard lock(mutex_);
  for (const Group& g : groups_) models[g.model] = nlohmann::json::parse(g.comm->recorder().dump_json());
  return {{"rank", rank_}, {"world", world_}, {"models", models}};
}

std::vector<std::string> ParallelRanks::dump(const std::string& reason) const {
  std::vector<std::string> written;
  const std::string dir = config_.parallel.flight_recorder_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::lock_guard lock(mutex_);
  for (const Group& g : groups_) {
    try {
      nlohmann::json doc = nlohmann::json::parse(g.comm->recorder().dump_json());
      doc["model"] = g.model;
      doc["reason"] = reason;
      const std::string path = dir + "/collectives." + file_safe(g.model) + ".rank" + std::to_string(rank_) + ".json";
      // Written beside and renamed into place, so a reader that sees the
      // file sees all of it.
      const std::string partial = path + ".partial";
      {
        std::ofstream out(partial, std::ios::trunc);
        out << doc.dump(1) << "\n";
        out.flush();
        if (!out) throw std::runtime_error("cannot write " + partial);
      }
      std::filesystem::rename(partial, path);
      written.push_back(path);
      spdlog::warn("flight recorder of model {} rank {} written to {} ({})", g.model, rank_, path, reason);
    } catch (const std::exception& e) {
      spdlog::error("flight recorder of model {} rank {} not written: {}", g.model, rank_, e.what());
    }
  }
  return written;
}

}  // namespace tessera
