#include <gtest/gtest.h>

#include "server/serving/memory_budget.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = uint64_t(1) << 20;

ResidentModel model(const char* name, uint64_t mib, bool idle, int used_seconds_ago) {
  return {name, mib * kMiB, idle, Clock::time_point() + std::chrono::hours(1) - std::chrono::seconds(used_seconds_ago)};
}

TEST(MemoryBudget, NoBudgetFitsEverything) {
  const EvictionPlan plan = plan_eviction(0, 1 << 30, {model("a", 900, true, 5)});
  EXPECT_TRUE(plan.fits);
  EXPECT_TRUE(plan.unload.empty());
}

TEST(MemoryBudget, RoomLeftUnloadsNothing) {
  const EvictionPlan plan = plan_eviction(1000 * kMiB, 300 * kMiB, {model("a", 300, true, 5), model("b", 400, true, 50)});
  EXPECT_TRUE(plan.fits);
  EXPECT_TRUE(plan.unload.empty());
}

TEST(MemoryBudget, TheLeastRecentlyUsedIdleModelGoesFirstAndNoMore) {
  // 300 + 400 + 200 held: 400 more needs 300 freed. "b" was used longest
  // ago and frees enough alone; "c" is older still but serving a request.
  const EvictionPlan plan =
      plan_eviction(1000 * kMiB, 400 * kMiB, {model("a", 300, true, 5), model("b", 400, true, 50), model("c", 200, false, 500)});
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.unload, std::vector<std::string>{"b"});
}

TEST(MemoryBudget, SeveralGoInOrderOfLastUse) {
  // 700 held, 900 more: "old" and "mid" free 600, which is enough ("new" stays).
  const EvictionPlan plan = plan_eviction(
      1000 * kMiB, 900 * kMiB, {model("new", 100, true, 1), model("old", 300, true, 100), model("mid", 300, true, 10)});
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.unload, (std::vector<std::string>{"old", "mid"}));
  EXPECT_EQ(plan_eviction(1000 * kMiB, 1000 * kMiB, {model("new", 100, true, 1), model("old", 300, true, 100)}).unload,
            (std::vector<std::string>{"old", "new"}));
}

TEST(MemoryBudget, BusyModelsMakeItWaitNotFail) {
  const EvictionPlan plan = plan_eviction(1000 * kMiB, 600 * kMiB, {model("a", 500, false, 5), model("b", 100, true, 50)});
  EXPECT_FALSE(plan.fits);
  EXPECT_TRUE(plan.fits_when_idle);
  EXPECT_TRUE(plan.unload.empty());  // nothing is unloaded for a load that cannot start yet
}

TEST(MemoryBudget, AModelLargerThanTheBudgetNeverFits) {
  const EvictionPlan plan = plan_eviction(1000 * kMiB, 1001 * kMiB, {});
  EXPECT_FALSE(plan.fits);
  EXPECT_FALSE(plan.fits_when_idle);
}

TEST(MemoryBudget, AnExactFitIsAFit) {
  const EvictionPlan plan = plan_eviction(1000 * kMiB, 500 * kMiB, {model("a", 500, false, 5)});
  EXPECT_TRUE(plan.fits);
  EXPECT_TRUE(plan.unload.empty());
}

}  // namespace
}  // namespace tessera
