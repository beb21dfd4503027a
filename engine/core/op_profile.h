#pragma once
// Where a forward pass spends its time: wall time per named step of the
// decoder (summed over layers), and for the linears the weight bytes they
// read, so each can be set against the memory bandwidth.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

class OpProfile {
 public:
  struct Entry {
    std::string name;
    int64_t calls = 0;
    double seconds = 0.0;
    uint64_t weight_bytes = 0;  // read by the linears of this step, summed over calls
  };

  void add(const char* name, double seconds, uint64_t weight_bytes);
  // One whole forward pass (the denominator of the shares).
  void add_pass(double seconds, int64_t tokens);
  void reset();

  const std::vector<Entry>& entries() const { return entries_; }
  int64_t passes() const { return passes_; }
  int64_t tokens() const { return tokens_; }
  double pass_seconds() const { return pass_seconds_; }

  // A table, slowest step first: calls, total ms, share of the passes'
  // time, µs per pass, and GB/s of weights read for the linears.
  std::string format(const std::string& title) const;

 private:
  std::vector<Entry> entries_;  // a dozen or two names: searched linearly
  int64_t passes_ = 0, tokens_ = 0;
  double pass_seconds_ = 0.0;
};

using ProfileClock = std::chrono::steady_clock;

inline double seconds_between(ProfileClock::time_point a, ProfileClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace tessera
