#pragma once
// A fixed set of worker threads that run one parallel loop at a time. The
// calling thread takes part, so a pool of N threads has N-1 workers. Workers
// spin briefly between loops (a forward pass issues hundreds of small ones),
// then sleep until the next.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(thread_index, begin, end) on contiguous chunks of [0, n) in
  // parallel and returns when all are done. Chunks are at least `grain` long.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int, int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  bool wait_for_job(uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace tessera::cpu
