#pragma once
// Ranks 1…world-1 started on this machine as `tessera worker` children of
// the serving process, and watched: a child that exits while the group
// should run is reported. Children get SIGTERM when this process dies
// (PR_SET_PDEATHSIG), and SIGTERM then SIGKILL when it stops them.
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera {

class WorkerProcesses {
 public:
  // Called on a watcher thread with the rank and its wait() status.
  using ExitListener = std::function<void(int rank, int status)>;

  // Starts `executable worker --rank R --world W --leader LEADER` plus
  // `extra_args` for each rank R ≥ 1, with this process's environment plus
  // `extra_env` (NAME=VALUE; secrets go here, not on the command line).
  // Throws tessera::Error when one cannot start.
  WorkerProcesses(const std::string& executable, int world, const std::string& leader,
                  const std::vector<std::string>& extra_args, const std::vector<std::string>& extra_env,
                  ExitListener on_exit);
  ~WorkerProcesses();  // stop()
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;

  std::vector<pid_t> pids() const;
  // Waits up to `grace_ms` for the children to exit on their own (rank 0
  // released them), then SIGTERM, then SIGKILL; the listener is not called.
  void stop(int grace_ms = 5000);

 private:
  void watch(size_t index);

  std::vector<pid_t> pids_;
  std::vector<std::thread> watchers_;
  std::vector<std::atomic<bool>> exited_;
  std::atomic<bool> stopping_{false};
  ExitListener on_exit_;
};

}  // namespace tessera
