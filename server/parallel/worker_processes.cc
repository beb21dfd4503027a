#include "server/parallel/worker_processes.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "engine/core/error.h"

namespace tessera {

WorkerProcesses::WorkerProcesses(const std::string& executable, int world, const std::string& leader,
                                 const std::vector<std::string>& extra_args, const std::vector<std::string>& extra_env,
                                 ExitListener on_exit)
    : exited_(size_t(std::max(world - 1, 0))), on_exit_(std::move(on_exit)) {
  const pid_t parent = getpid();
  // The environment, with `extra_env` replacing any variable of the same name.
  std::vector<std::string> env_strings = extra_env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& x : extra_env) replaced |= entry.substr(0, x.find('=') + 1) == x.substr(0, x.find('=') + 1);
    if (!replaced) env_strings.emplace_back(entry);
  }
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pids_.reserve(exited_.size());  // watchers read their entry while later ranks start
  for (int rank = 1; rank < world; ++rank) {
    std::vector<std::string> args = {executable, "worker", "--rank", std::to_string(rank), "--world", std::to_string(world),
                                     "--leader", leader};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    // Built before fork: the child may only make async-signal-safe calls.
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      stop(0);
      throw Error(std::string("cannot start worker rank ") + std::to_string(rank) + ": " + std::strerror(errno));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);  // the parent died before the line above
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);  // signals the parent blocks for sigwait
      // Nothing but standard I/O is inherited (listening sockets, client
      // connections, model files), whatever was opened without CLOEXEC.
      close_range(3, ~0u, 0);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    pids_.push_back(pid);
    watchers_.emplace_back([this, i = pids_.size() - 1] { watch(i); });
  }
}

WorkerProcesses::~WorkerProcesses() { stop(); }

std::vector<pid_t> WorkerProcesses::pids() const { return pids_; }

void WorkerProcesses::watch(size_t index) {
  int status = 0;
  while (waitpid(pids_[index], &status, 0) < 0 && errno == EINTR) {
  }
  exited_[index] = true;
  if (!stopping_.load() && on_exit_) on_exit_(int(index) + 1, status);
}

void WorkerProcesses::stop(int grace_ms) {
  if (stopping_.exchange(true)) return;
  const auto all_exited = [this] {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (!exited_[i].load()) return false;
    }
    return true;
  };
  const auto wait_for_exit = [&](int ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!all_exited() && std::chrono::steady_clock::now() < deadline) usleep(10'000);
  };
  wait_for_exit(grace_ms);
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (!exited_[i].load()) kill(pids_[i], SIGTERM);
  }
  wait_for_exit(2000);
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (!exited_[i].load()) kill(pids_[i], SIGKILL);
  }
  for (std::thread& t : watchers_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace tessera
