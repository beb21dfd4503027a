// tessera worker: one rank (1…world-1) of the tensor- or context-parallel groups a
// serving process leads. It joins the leader's rendezvous store, loads the
// models and settings the leader published (its own shard of each), and
// runs every step plan rank 0 broadcasts until rank 0 releases it (exit 0).
// A failed or timed-out collective writes the flight recorders and exits 3,
// so a supervisor restarts the group; SIGUSR1 writes them and goes on.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <thread>

#include "engine/runtime/parallel/plan_broadcast.h"
#include "server/cli/commands.h"
#include "engine/core/error.h"
#include "kernels/comm/rendezvous_store.h"
#include "server/parallel/group_secret.h"
#include "server/parallel/parallel_ranks.h"
#include "server/serving/runner_setup.h"

namespace tessera::cli {
namespace {

constexpr int kGroupFailedExit = 3;

struct WorkerOptions {
  int rank = 1;
  int world = 2;
  std::string leader;
  int threads = -1;
  std::string device;
  double join_timeout_s = 300.0;
  std::string secret_file;  // TESSERA_RENDEZVOUS_SECRET, when set, wins
};

struct FollowerModel {
  std::string name;
  std::unique_ptr<ModelRunner> runner;
};

std::vector<FollowerModel> load_models(ParallelRanks& ranks, const WorkerOptions& o) {
  std::vector<FollowerModel> models;
  const Config& config = ranks.config();
  for (size_t i = 0; i < config.models.size(); ++i) {
    ModelConfig m = config.models[i];
    if (o.threads >= 0) m.threads = o.threads;
    if (!o.device.empty()) m.device = o.device;
    FollowerModel f{m.name, load_runner(m, i, &ranks)};
    spdlog::info("rank {} of {}: model {} loaded ({} KV pages)", ranks.rank(), ranks.world(), m.name,
                 f.runner->kv_cache().n_pages());
    models.push_back(std::move(f));
  }
  return models;
}

[[noreturn]] void fail_group(int rank, const ParallelRanks* ranks, const std::string& what) {
  spdlog::error("rank {}: {}; leaving the group", rank, what);
  if (ranks) ranks->dump(what);
  spdlog::shutdown();
  std::_Exit(kGroupFailedExit);
}

int run_worker(const WorkerOptions& o) {
  // SIGUSR1 is taken by one thread with sigwait: block it before any other starts.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  // A peer that went away is a failed collective (EPIPE), not a reason to die.
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<ParallelRanks> ranks;
  try {
    const std::string secret = read_group_secret(o.secret_file);
    if (secret.empty()) {
      throw Error(std::string("a worker needs its group's secret: set ") + kRendezvousSecretEnv + " or pass --secret-file");
    }
    ranks = ParallelRanks::follow(o.rank, o.world, o.leader, std::chrono::milliseconds(int64_t(o.join_timeout_s * 1000)), secret);
  } catch (const std::exception& e) {
    fail_group(o.rank, nullptr, e.what());
  }
  ParallelRanks* shared = ranks.get();
  std::thread([shared, usr1] {
    for (int sig = 0;;) {
      if (sigwait(&usr1, &sig) == 0) shared->dump("SIGUSR1");
    }
  }).detach();
  spdlog::info("rank {} of {} joined leader {}", o.rank, o.world, o.leader);

  std::vector<FollowerModel> models;
  try {
    models = load_models(*ranks, o);
  } catch (const std::exception& e) {
    fail_group(o.rank, shared, e.what());
  }
  std::vector<std::thread> followers;
  for (FollowerModel& f : models) {
    followers.emplace_back([&f, shared, rank = o.rank] {
      try {
        Stream& stream = f.runner->backend().default_stream();
        while (auto plan = receive_plan(*f.runner->communicator(), stream)) f.runner->follow(*plan);
      } catch (const std::exception& e) {
        fail_group(rank, shared, "model " + f.name + ": " + e.what());
      }
    });
  }
  for (std::thread& t : followers) t.join();
  spdlog::info("rank {}: released by rank 0", o.rank);
  return 0;
}

}  // namespace

Runner add_worker_command(CLI::App& app) {
  auto o = std::make_shared<WorkerOptions>();
  CLI::App* cmd = app.add_subcommand("worker", "Run one parallel rank of a leader's models (multi-machine serving)");
  cmd->add_option("--rank", o->rank, "This rank (1..world-1; the leader is rank 0)")->required()->check(CLI::Range(1, 63));
  cmd->add_option("--world", o->world, "Ranks in the group, the leader included")->required()->check(CLI::Range(2, 64));
  cmd->add_option("--leader", o->leader, "HOST:PORT of the leader's rendezvous store (its parallel.leader)")->required();
  cmd->add_option("--threads,-t", o->threads, "CPU threads (default: the leader's setting for each model)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--device", o->device, "Device to run on (default: the leader's setting)");
  cmd->add_option("--join-timeout", o->join_timeout_s, "Seconds to wait for the leader")->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  cmd->add_option("--secret-file", o->secret_file,
                  "File whose first line is the group's rendezvous secret (or set TESSERA_RENDEZVOUS_SECRET)");
  return [o] { return run_worker(*o); };
}

}  // namespace tessera::cli
