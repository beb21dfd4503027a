#pragma once
// Which loaded models to unload so that one more fits in the daemon's
// memory budget: the least recently used idle ones, and only as many as it
// takes. A model serving a request is never chosen.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct ResidentModel {
  std::string name;
  uint64_t bytes = 0;  // counted against the budget
  bool idle = false;   // no request holds it (a loading model is never idle)
  std::chrono::steady_clock::time_point last_used;
};

struct EvictionPlan {
  bool fits = false;                // after unloading `unload`, the new model fits
  bool fits_when_idle = false;      // else: it would, once busy models are idle
  std::vector<std::string> unload;  // least recently used first; empty unless fits
};

// `budget` 0 means no limit. `needed` is the new model's footprint.
EvictionPlan plan_eviction(uint64_t budget, uint64_t needed, const std::vector<ResidentModel>& resident);

}  // namespace tessera
