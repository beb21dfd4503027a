#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/runtime/active_threads.h"
#include "kernels/cpu/runtime/thread_pool.h"

namespace tessera::cpu {
namespace {

using Clock = ActiveThreads::Clock;

// Feeds `windows` windows of loops, each with `late_loops` of its loops late.
void feed_windows(ActiveThreads& active, int windows, int late_loops, Clock::time_point now) {
  for (int w = 0; w < windows; ++w) {
    for (int i = 0; i < ActiveThreads::kWindowLoops; ++i) active.after_loop(i < late_loops, [now] { return now; });
  }
}

TEST(ThreadPool, EveryIndexRunsOnceWhateverTheChunking) {
  ThreadPool pool(3);
  for (const int64_t n : {1, 2, 7, 1000}) {
    for (const int64_t grain : {1, 3, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int chunk, int64_t begin, int64_t end) {
        EXPECT_LT(chunk, pool.size());
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " grain " << grain << " index " << i;
    }
  }
}

// Claimed chunks: up to per_thread a thread, non-empty, each index once,
// and all of them once the loop is long enough to fill them.
TEST(ThreadPool, ClaimedChunksCoverEveryIndexOnceInUpToPerThreadChunksEach) {
  ThreadPool pool(2);
  for (const int64_t n : {1, 5, 8, 96, 1001}) {
    for (const int per_thread : {1, 4}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> chunks{0};
      pool.parallel_for_claimed(n, 2, per_thread, [&](int chunk, int64_t begin, int64_t end) {
        EXPECT_LT(chunk, per_thread * pool.size());
        EXPECT_LT(begin, end);
        chunks++;
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[size_t(i)].load(), 1) << "n " << n << " per thread " << per_thread;
      EXPECT_LE(chunks.load(), std::max<int64_t>(1, std::min<int64_t>(n / 2, per_thread * pool.size())));
      if (n >= 96) EXPECT_EQ(chunks.load(), per_thread * pool.size()) << "n " << n;
    }
  }
}

// Back-to-back loops whose chunk counts grow (2, then 8): a thread still
// looking at the finished loop must not claim a chunk of the next one
// before it is published. If it did, a chunk would run twice, or
// parallel_for would return with a chunk still running.
TEST(ThreadPool, BackToBackLoopsOfGrowingChunkCountsNeverOverlap) {
  ThreadPool pool(8);
  constexpr int64_t kIndices = 64;
  std::vector<std::atomic<int>> hits(kIndices);
  std::atomic<int> in_flight{0};
  for (int loop = 0; loop < 20000; ++loop) {
    const int64_t grain = loop % 2 ? 8 : 32;  // 8 chunks, then 2
    for (auto& h : hits) h.store(0, std::memory_order_relaxed);
    pool.parallel_for(kIndices, grain, [&](int, int64_t begin, int64_t end) {
      in_flight.fetch_add(1);
      for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
      in_flight.fetch_sub(1);
    });
    ASSERT_EQ(in_flight.load(), 0) << "loop " << loop << " returned with a chunk still running";
    for (int64_t i = 0; i < kIndices; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "loop " << loop << " index " << i;
  }
}

TEST(ActiveThreads, ShrinksWhenWorkersKeepArrivingLate) {
  ActiveThreads active(2);
  const Clock::time_point t0 = Clock::now();
  feed_windows(active, ActiveThreads::kLateWindows - 1, ActiveThreads::kWindowLoops / 2, t0);
  EXPECT_EQ(active.count(), 2) << "one late window short of the threshold";
  feed_windows(active, 1, ActiveThreads::kWindowLoops / 2, t0);
  EXPECT_EQ(active.count(), 1);
}

TEST(ActiveThreads, ScatteredLateWindowsKeepEveryThread) {
  ActiveThreads active(2);
  const Clock::time_point t0 = Clock::now();
  // A quiet machine: a late window now and then, and windows with a few late loops.
  for (int round = 0; round < 40; ++round) {
    feed_windows(active, 1, ActiveThreads::kWindowLoops, t0);
    feed_windows(active, 2, ActiveThreads::kWindowLoops / 2 - 1, t0);
  }
  EXPECT_EQ(active.count(), 2);
}

TEST(ActiveThreads, TriesEveryThreadAgainAndShrinksAtOnceIfStillLate) {
  ActiveThreads active(4);
  const Clock::time_point t0 = Clock::now();
  feed_windows(active, ActiveThreads::kHistoryWindows, ActiveThreads::kWindowLoops, t0);
  ASSERT_EQ(active.count(), 3);
  feed_windows(active, 3, ActiveThreads::kWindowLoops, t0 + ActiveThreads::kShrunkTime / 2);
  EXPECT_EQ(active.count(), 3) << "loops while shrunk do not count";
  const Clock::time_point later = t0 + ActiveThreads::kShrunkTime;
  active.after_loop(false, [later] { return later; });
  ASSERT_EQ(active.count(), 4) << "tried again once the time is up";
  feed_windows(active, 1, ActiveThreads::kWindowLoops, later);
  EXPECT_EQ(active.count(), 3) << "the first late window of the trial";
}

TEST(ActiveThreads, StaysWholeOnceTheNeighbourHasGone) {
  ActiveThreads active(2);
  const Clock::time_point t0 = Clock::now();
  feed_windows(active, ActiveThreads::kHistoryWindows, ActiveThreads::kWindowLoops, t0);
  ASSERT_EQ(active.count(), 1);
  const Clock::time_point later = t0 + ActiveThreads::kShrunkTime;
  active.after_loop(false, [later] { return later; });
  ASSERT_EQ(active.count(), 2);
  feed_windows(active, ActiveThreads::kHistoryWindows, 0, later);
  // A lone late window after the history has cleared changes nothing.
  feed_windows(active, 1, ActiveThreads::kWindowLoops, later);
  EXPECT_EQ(active.count(), 2);
}

TEST(ActiveThreads, OneThreadNeverShrinks) {
  ActiveThreads active(1);
  feed_windows(active, ActiveThreads::kHistoryWindows, ActiveThreads::kWindowLoops, Clock::now());
  EXPECT_EQ(active.count(), 1);
}

}  // namespace
}  // namespace tessera::cpu
