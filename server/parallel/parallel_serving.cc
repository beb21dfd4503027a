#include "server/parallel/parallel_serving.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "engine/core/error.h"
#include "kernels/comm/rendezvous_store.h"
#include "server/parallel/group_secret.h"

namespace tessera {
namespace {

// A port no one listens on right now, for a store only this machine's
// ranks reach.
int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) throw Error("cannot find a free loopback port for the rendezvous store");
  return ntohs(addr.sin_port);
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace

ParallelServing::ParallelServing(Config& config) : settings_(config.parallel) {
  if (!settings_.enabled()) return;
  ParallelConfig& p = config.parallel;
  if (p.leader.empty()) p.leader = "127.0.0.1:" + std::to_string(free_loopback_port());
  if (p.spawn_workers) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (ModelConfig& m : config.models) {
      if (m.threads == 0) m.threads = int(std::max(1u, cores / unsigned(p.world())));
    }
  }
  settings_ = p;
  secret_ = leader_group_secret(p);
  ranks_ = ParallelRanks::lead(config, secret_);
  spdlog::info("{} parallelism over {} ranks; rendezvous store at {}", p.context > 1 ? "context" : "tensor", p.world(),
               p.leader);
}

ParallelServing::~ParallelServing() { stop_workers(0); }

void ParallelServing::start_workers() {
  if (!ranks_ || !settings_.spawn_workers) return;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  char join_timeout[32];
  std::snprintf(join_timeout, sizeof(join_timeout), "%.3f", settings_.join_timeout_s);
  workers_ = std::make_unique<WorkerProcesses>(self, settings_.world(), settings_.leader,
                                               std::vector<std::string>{"--join-timeout", join_timeout},
                                               std::vector<std::string>{std::string(kRendezvousSecretEnv) + "=" + secret_},
                                               [this](int rank, int status) { worker_exited(rank, status); });
  std::string pids;
  for (pid_t pid : workers_->pids()) pids += " " + std::to_string(pid);
  spdlog::info("started worker ranks 1..{} (pids{})", settings_.world() - 1, pids);
}

void ParallelServing::worker_exited(int rank, int status) const {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    spdlog::info("worker rank {} exited after rank 0 released it", rank);
    return;
  }
  spdlog::error("worker rank {} {}", rank, exit_text(status));
  // The group's next collective fails and faults the engine; should none
  // run (the models still loading), fail once a collective would have.
  const auto wait = std::chrono::milliseconds(int64_t((settings_.collective_timeout_s + 1.0) * 1000));
  std::thread([wait] {
    std::this_thread::sleep_for(wait);
    kill(getpid(), SIGUSR2);
  }).detach();
}

ModelLoop::FaultListener ParallelServing::fault_listener() const {
  if (!ranks_) return {};
  const ParallelRanks* ranks = ranks_.get();
  return [ranks](const std::string& what) {
    ranks->dump(what);
    kill(getpid(), SIGUSR2);
  };
}

void ParallelServing::dump(const std::string& reason) const {
  if (!ranks_) {
    spdlog::info("{}: no parallel groups, no flight recorder to write", reason);
    return;
  }
  ranks_->dump(reason);
}

void ParallelServing::stop_workers(int grace_ms) {
  if (workers_) workers_->stop(grace_ms);
}

std::string ParallelServing::describe() const {
  if (!ranks_) return "";
  if (settings_.context > 1) return ", long prefills divided over " + std::to_string(settings_.context) + " context-parallel ranks";
  return ", each split over " + std::to_string(settings_.tensor) + " tensor-parallel ranks";
}

}  // namespace tessera
