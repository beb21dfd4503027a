#pragma once
// A fixed set of worker threads that run one parallel loop at a time. The
// calling thread takes part, so a pool of N threads has N-1 workers.
//
// A loop is split into chunks that threads claim one at a time, the caller
// included: a worker that is descheduled (another process on its core)
// claims nothing, and the caller runs the chunks it left, so a loop waits
// only for chunks already under way, never for a thread that has not shown
// up. Waiting threads spin briefly (a forward pass issues hundreds of small
// loops), then sleep on a futex. While workers keep arriving late, loops use
// fewer threads (kernels/cpu/runtime/active_threads.h).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/runtime/active_threads.h"

namespace tessera::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(chunk_index, begin, end) on contiguous chunks of [0, n) in
  // parallel and returns when all are done. Chunks are at least `grain`
  // long, at most size() of them; chunk_index < size() identifies the chunk
  // (not the thread that runs it).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int, int64_t, int64_t)>& fn);

  // As parallel_for, in up to `per_thread` chunks a thread, which threads
  // claim as they free up: a thread whose core runs slower (a busy
  // neighbour on its vCPU) takes fewer, and the loop ends when the work
  // does, not when the slowest thread's fixed share does. For loops of many
  // equal, independent pieces. chunk_index < per_thread * size().
  void parallel_for_claimed(int64_t n, int64_t grain, int per_thread, const std::function<void(int, int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  bool wait_for_job(uint32_t seen);
  // Claims and runs chunks of loop `generation` until none is left.
  void run_chunks(uint32_t generation, bool worker);
  void wait_for_chunks(int chunks);
  void run_loop(int64_t n, int64_t grain, int per_thread, const std::function<void(int, int64_t, int64_t)>& fn);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // The loop being run; written by the caller before it publishes the
  // loop's generation in `claims_`, read only by threads that claim one of
  // its chunks (which the caller cannot have finished).
  std::atomic<const std::function<void(int, int64_t, int64_t)>*> job_{nullptr};
  std::atomic<int64_t> job_n_{0};
  // generation << 32 | chunk count << 16 | next chunk to claim: one word,
  // so a claim cannot take a chunk of a loop other than the one its reader
  // saw. The count is in the word, not beside it: a thread still looking at
  // a finished loop must not judge its exhausted counter against the next
  // loop's larger count, written before that loop is published (it would
  // claim a chunk no one published, run the next loop's function early and
  // count it done, and the caller could return while chunks still run).
  std::atomic<uint64_t> claims_{0};
  std::atomic<int> done_{0};  // chunks of the current loop finished
  std::atomic<int> sleeping_{0};
  // The caller, once done spinning, sleeps on `finished_` for the last
  // chunks; the worker that finishes one while it sleeps wakes it.
  std::mutex finish_mutex_;
  std::condition_variable finished_;
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int> participants_{0};  // workers that claimed a chunk of the current loop
  ActiveThreads active_;  // the caller's alone (loops run one at a time)
};

}  // namespace tessera::cpu
