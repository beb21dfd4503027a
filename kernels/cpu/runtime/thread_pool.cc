#include "kernels/cpu/runtime/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace tessera::cpu {
namespace {

constexpr auto kSpinTime = std::chrono::microseconds(200);
// Waiting for the last chunks of a loop: long enough to cover a chunk
// finishing on a running core, short enough not to hold a core that a
// descheduled worker needs.
constexpr auto kFinishSpinTime = std::chrono::microseconds(50);
constexpr uint32_t kPausesPerClockRead = 64;

std::pair<int64_t, int64_t> chunk_range(int64_t n, int chunks, int index) {
  const int64_t base = n / chunks, extra = n % chunks;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

// The fields of ThreadPool::claims_.
constexpr int kMaxChunks = 0xffff;
uint32_t generation_of(uint64_t claims) { return uint32_t(claims >> 32); }
int chunks_of(uint64_t claims) { return int((claims >> 16) & kMaxChunks); }
int chunk_of(uint64_t claims) { return int(claims & kMaxChunks); }
uint64_t first_claim(uint32_t generation, int chunks) { return uint64_t(generation) << 32 | uint64_t(chunks) << 16; }

// Spins until `done()` or `limit` passes; true if done.
template <class Done>
bool spin_until(const Done& done, std::chrono::microseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (uint32_t spins = 1;; ++spins) {
    if (done()) return true;
    // The clock is read once per batch of pauses: reading it on every one
    // costs more than the wait it measures.
    if (spins % kPausesPerClockRead == 0 && std::chrono::steady_clock::now() >= until) return false;
    _mm_pause();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : active_(std::max(1, n_threads)) {
  for (int i = 1; i < std::max(1, n_threads); ++i) workers_.emplace_back([this] { worker_loop(); });
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
bool ThreadPool::wait_for_job(uint32_t seen) {
  const auto changed = [&] {
    return generation_of(claims_.load(std::memory_order_acquire)) != seen || stopping_.load(std::memory_order_acquire);
  };
  if (!spin_until(changed, kSpinTime)) {
    std::unique_lock lock(mutex_);
    sleeping_.fetch_add(1);
    wake_.wait(lock, changed);
    sleeping_.fetch_sub(1);
  }
  return !stopping_.load(std::memory_order_acquire);
}

void ThreadPool::run_chunks(uint32_t generation, bool worker) {
  uint64_t claims = claims_.load(std::memory_order_acquire);
  bool claimed = false;
  while (generation_of(claims) == generation) {
    const auto* fn = job_.load(std::memory_order_acquire);
    const int64_t n = job_n_.load(std::memory_order_acquire);
    const int chunks = chunks_of(claims), chunk = chunk_of(claims);
    if (chunk >= chunks) return;
    // A successful claim means the loop is still the one read above: the
    // caller cannot finish it, let alone start another, while a chunk is
    // unclaimed (and chunk < chunks of that same loop).
    if (!claims_.compare_exchange_weak(claims, claims + 1, std::memory_order_acq_rel)) continue;
    if (worker && !claimed) participants_.fetch_add(1, std::memory_order_relaxed);
    claimed = true;
    const auto [begin, end] = chunk_range(n, chunks, chunk);
    (*fn)(chunk, begin, end);
    done_.fetch_add(1);
    if (caller_sleeping_.load()) {
      std::lock_guard lock(finish_mutex_);
      finished_.notify_one();
    }
    claims = claims_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  while (wait_for_job(seen)) {
    seen = generation_of(claims_.load(std::memory_order_acquire));
    run_chunks(seen, true);
  }
}

void ThreadPool::wait_for_chunks(int chunks) {
  const auto finished = [&] { return done_.load(std::memory_order_acquire) == chunks; };
  if (spin_until(finished, kFinishSpinTime)) return;
  // A condition variable with a bounded wait rather than std::atomic::wait:
  // a wake-up lost anywhere costs at most the timeout, never the process.
  // (A CPU run on a 16-vCPU host was seen to stall for minutes.)
  std::unique_lock lock(finish_mutex_);
  caller_sleeping_.store(true);
  while (!finished()) finished_.wait_for(lock, std::chrono::microseconds(200));
  caller_sleeping_.store(false);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int, int64_t, int64_t)>& fn) {
  run_loop(n, grain, 1, fn);
}

void ThreadPool::parallel_for_claimed(int64_t n, int64_t grain, int per_thread,
                                      const std::function<void(int, int64_t, int64_t)>& fn) {
  run_loop(n, grain, std::max(1, per_thread), fn);
}

void ThreadPool::run_loop(int64_t n, int64_t grain, int per_thread, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t most = n / std::max<int64_t>(grain, 1);
  const int threads = active_.count();
  const int chunks = threads == 1 ? 1 : int(std::clamp<int64_t>(most, 1, std::min<int64_t>(int64_t(threads) * per_thread, kMaxChunks)));
  if (chunks == 1 || workers_.empty()) {
    fn(0, 0, n);
    if (most > 1 && !workers_.empty()) active_.after_loop(false, ActiveThreads::Clock::now);  // shrunk to one thread
    return;
  }
  job_.store(&fn, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  participants_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_of(claims_.load(std::memory_order_relaxed)) + 1;
  {
    // Publishing under the lock pairs with the sleepers' predicate check.
    std::lock_guard lock(mutex_);
    claims_.store(first_claim(generation, chunks), std::memory_order_release);
  }
  if (sleeping_.load() > 0) wake_.notify_all();
  run_chunks(generation, false);
  wait_for_chunks(chunks);
  // Late: fewer workers took part than the loop had chunks for them.
  const int worker_chunks = std::min(chunks, size()) - 1;
  active_.after_loop(participants_.load(std::memory_order_relaxed) < worker_chunks, ActiveThreads::Clock::now);
}

}  // namespace tessera::cpu
