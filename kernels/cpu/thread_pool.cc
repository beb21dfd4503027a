#include "kernels/cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace tessera::cpu {
namespace {

constexpr auto kSpinTime = std::chrono::microseconds(200);
constexpr uint32_t kPausesPerClockRead = 64;

std::pair<int64_t, int64_t> chunk_range(int64_t n, int chunks, int index) {
  const int64_t base = n / chunks, extra = n % chunks;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  for (int i = 1; i < std::max(1, n_threads); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

// Spins for a while, then sleeps, until a new generation or shutdown.
bool ThreadPool::wait_for_job(uint64_t seen) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
  uint32_t spins = 0;
  while (generation_.load(std::memory_order_acquire) == seen && !stopping_.load(std::memory_order_acquire)) {
    // The clock is read once per batch of pauses: reading it on every one
    // costs more than the wait it measures.
    if (++spins % kPausesPerClockRead != 0 || std::chrono::steady_clock::now() < spin_until) {
      _mm_pause();
      continue;
    }
    std::unique_lock lock(mutex_);
    sleeping_.fetch_add(1);
    wake_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
    sleeping_.fetch_sub(1);
  }
  return !stopping_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (wait_for_job(seen)) {
    seen = generation_.load(std::memory_order_acquire);
    if (index < job_chunks_) {
      const auto [begin, end] = chunk_range(job_n_, job_chunks_, index);
      (*job_)(index, begin, end);
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = int(std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, size()));
  if (chunks == 1 || workers_.empty()) {
    fn(0, 0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_chunks_ = chunks;
  pending_.store(int(workers_.size()), std::memory_order_relaxed);
  {
    // Publishing under the lock pairs with the sleepers' predicate check.
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  if (sleeping_.load() > 0) wake_.notify_all();
  const auto [begin, end] = chunk_range(n, chunks, 0);
  fn(0, begin, end);
  while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
}

}  // namespace tessera::cpu
