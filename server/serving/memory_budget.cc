#include "server/serving/memory_budget.h"

#include <algorithm>

namespace tessera {

EvictionPlan plan_eviction(uint64_t budget, uint64_t needed, const std::vector<ResidentModel>& resident) {
  EvictionPlan plan;
  if (budget == 0) {
    plan.fits = true;
    return plan;
  }
  if (needed > budget) return plan;  // never, whatever is unloaded
  uint64_t in_use = 0;
  std::vector<const ResidentModel*> idle;
  for (const ResidentModel& m : resident) {
    in_use += m.bytes;
    if (m.idle) idle.push_back(&m);
  }
  std::stable_sort(idle.begin(), idle.end(), [](const ResidentModel* a, const ResidentModel* b) { return a->last_used < b->last_used; });
  // Unsigned: compare what stays plus what comes with the budget, never subtract past zero.
  std::vector<std::string> unload;
  for (const ResidentModel* m : idle) {
    if (in_use + needed <= budget) break;
    in_use -= m->bytes;
    unload.push_back(m->name);
  }
  if (in_use + needed <= budget) {
    plan.fits = true;
    plan.unload = std::move(unload);
  } else {
    plan.fits_when_idle = true;  // needed <= budget: unloading every model would make room
  }
  return plan;
}

}  // namespace tessera
