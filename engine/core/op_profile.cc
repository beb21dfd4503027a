#include "engine/core/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace tessera {

void OpProfile::add(const char* name, double seconds, uint64_t weight_bytes) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == name; });
  if (it == entries_.end()) {
    entries_.push_back({name});
    it = entries_.end() - 1;
  }
  ++it->calls;
  it->seconds += seconds;
  it->weight_bytes += weight_bytes;
}

void OpProfile::add_pass(double seconds, int64_t tokens) {
  ++passes_;
  tokens_ += tokens;
  pass_seconds_ += seconds;
}

void OpProfile::reset() { *this = OpProfile(); }

std::string OpProfile::format(const std::string& title) const {
  std::vector<Entry> sorted = entries_;
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%s: %lld passes, %lld tokens, %.3f s (%.3f ms a pass)\n", title.c_str(),
                static_cast<long long>(passes_), static_cast<long long>(tokens_), pass_seconds_,
                passes_ > 0 ? 1e3 * pass_seconds_ / double(passes_) : 0.0);
  out += line;
  std::snprintf(line, sizeof line, "  %-14s %8s %10s %7s %11s %8s\n", "step", "calls", "total ms", "share", "us/pass", "GB/s");
  out += line;
  double listed = 0.0;
  for (const Entry& e : sorted) {
    listed += e.seconds;
    const double share = pass_seconds_ > 0.0 ? 100.0 * e.seconds / pass_seconds_ : 0.0;
    const double per_pass = passes_ > 0 ? 1e6 * e.seconds / double(passes_) : 0.0;
    char rate[16] = "";
    if (e.weight_bytes > 0 && e.seconds > 0.0) std::snprintf(rate, sizeof rate, "%.1f", double(e.weight_bytes) / e.seconds / 1e9);
    std::snprintf(line, sizeof line, "  %-14s %8lld %10.2f %6.1f%% %11.1f %8s\n", e.name.c_str(),
                  static_cast<long long>(e.calls), 1e3 * e.seconds, share, per_pass, rate);
    out += line;
  }
  const double other = pass_seconds_ - listed;
  if (passes_ > 0) {
    std::snprintf(line, sizeof line, "  %-14s %8s %10.2f %6.1f%% %11.1f\n", "(between)", "", 1e3 * other,
                  pass_seconds_ > 0.0 ? 100.0 * other / pass_seconds_ : 0.0, 1e6 * other / double(passes_));
    out += line;
    uint64_t weight_bytes = 0;
    for (const Entry& e : entries_) weight_bytes += e.weight_bytes;
    std::snprintf(line, sizeof line, "  weights read: %.1f MB a pass\n", double(weight_bytes) / double(passes_) / 1e6);
    out += line;
  }
  return out;
}

}  // namespace tessera
