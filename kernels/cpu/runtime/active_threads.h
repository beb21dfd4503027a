#pragma once
// How many of a thread pool's threads its loops use. All of them, until
// workers keep arriving late (another process busy on their cores): then
// one fewer for a while, and then all again, on trial. A worker that shares
// its core with a busy process makes each loop wait for it, and takes the
// core from the thread that would otherwise run alone beside that process.
//
// A loop is late when fewer workers took part than it had chunks for, and a
// window of kWindowLoops loops is late when half its loops are. When the
// last window and kLateWindows of the last kHistoryWindows are late, the
// count drops by one for kShrunkTime. The history survives the trial, so a
// first late window decides at once to shrink again. Serving on a quiet
// machine (its own HTTP threads beside the compute threads) saw at most 5
// late windows in 16; beside a busy process, most windows are late. On two
// cores with one busy process, serving ran at 60% of its quiet speed on one
// thread and 44% on two.
#include <bit>
#include <chrono>
#include <cstdint>

namespace tessera::cpu {

class ActiveThreads {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kWindowLoops = 64;
  static constexpr int kHistoryWindows = 16;
  static constexpr int kLateWindows = 12;
  static constexpr auto kShrunkTime = std::chrono::milliseconds(200);

  explicit ActiveThreads(int threads) : threads_(threads), count_(threads) {}

  int count() const { return count_; }

  // After each loop that could have used more than one thread: `late` as
  // above (always false for a loop the shrunk count ran on one thread).
  // `now()` gives the time; it is read only while shrunk and when shrinking,
  // not on every loop.
  template <class Now>
  void after_loop(bool late, const Now& now) {
    if (count_ < threads_) {
      if (now() >= restore_at_) {
        count_ = threads_;
        window_loops_ = window_late_ = 0;
      }
      return;
    }
    window_late_ += late ? 1 : 0;
    if (++window_loops_ < kWindowLoops) return;
    const bool late_window = 2 * window_late_ >= window_loops_;
    window_loops_ = window_late_ = 0;
    history_ = ((history_ << 1) | (late_window ? 1u : 0u)) & ((1u << kHistoryWindows) - 1);
    if (late_window && threads_ > 1 && std::popcount(history_) >= kLateWindows) {
      count_ = threads_ - 1;
      restore_at_ = now() + kShrunkTime;
    }
  }

 private:
  int threads_;
  int count_;
  int window_loops_ = 0, window_late_ = 0;
  uint32_t history_ = 0;  // one bit per recent window, newest lowest: late
  Clock::time_point restore_at_{};
};

}  // namespace tessera::cpu
