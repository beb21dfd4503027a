#include "kernels/cpu/thread_pool.h"

#include <algorithm>

namespace tessera::cpu {
namespace {

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

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int, int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      const auto [begin, end] = chunk_range(n, chunks, index);
      (*job)(index, begin, end);
    }
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = int(std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, size()));
  if (chunks == 1 || workers_.empty()) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = int(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  const auto [begin, end] = chunk_range(n, chunks, 0);
  fn(0, begin, end);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace tessera::cpu
