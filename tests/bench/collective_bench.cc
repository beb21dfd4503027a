// Latency of the collectives a tensor-parallel decode step makes, between
// two processes of one thread each on this machine (as `serve
// --tensor-parallel 2` runs them): all-gather and all-reduce of the sizes
// SmolLM2 and Qwen2.5 exchange per layer, and the plan broadcast. Prints
// the median and 90th percentile of each over --iterations calls.
//
// Usage: tessera_collective_bench [iterations]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "kernels/cpu/runtime/cpu_backend.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  size_t bytes;  // per rank
};

void run_rank(int rank, const std::string& rendezvous, int iterations) {
  tessera::cpu::CpuBackend backend(tessera::cpu::CpuBackendOptions{1, std::nullopt});
  tessera::CommunicatorOptions options;
  options.rank = rank;
  options.world = 2;
  options.rendezvous = rendezvous;
  auto comm = backend.create_communicator(options);
  tessera::Stream& stream = backend.default_stream();
  const Case cases[] = {{"all_gather", 1152}, {"all_gather", 3584}, {"all_gather", 65536},
                        {"all_reduce", 2304}, {"all_reduce", 3584}, {"broadcast", 64}};
  std::vector<char> in(1 << 20), out(2 << 20);
  for (const Case& c : cases) {
    std::vector<double> us;
    for (int i = 0; i < iterations + 50; ++i) {
      const auto t0 = Clock::now();
      const std::string op = c.name;
      if (op == "all_gather") comm->all_gather(in.data(), c.bytes, out.data(), stream);
      else if (op == "all_reduce") comm->all_reduce_sum(reinterpret_cast<float*>(out.data()), c.bytes / 4, stream);
      else comm->broadcast(out.data(), c.bytes, 0, stream);
      if (i >= 50) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    if (rank == 0) {
      std::printf("%-10s %7zu bytes: median %7.1f us, p90 %7.1f us\n", c.name, c.bytes, us[us.size() / 2],
                  us[us.size() * 9 / 10]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-collective-bench-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string rendezvous = "file:" + dir.string();
  const pid_t child = fork();
  if (child == 0) {
    run_rank(1, rendezvous, iterations);
    _exit(0);
  }
  run_rank(0, rendezvous, iterations);
  int status = 0;
  waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
