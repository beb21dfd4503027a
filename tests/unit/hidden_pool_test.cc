// The pooling of an embedding: fed in steps, with positions recomputed
// after preemption fed again, it counts each position once.
#include <gtest/gtest.h>

#include "scheduler/hidden_pool.h"

namespace tessera {
namespace {

TEST(HiddenPool, MeanCountsEachPositionOnceInOrder) {
  HiddenPool pool(Pooling::kMean, 3);
  const std::vector<float> rows = {1, 10, 2, 20, 3, 30};  // positions 0, 1, 2; width 2
  pool.add(std::span(rows).subspan(0, 4), 0, 2);
  EXPECT_FALSE(pool.complete());
  EXPECT_TRUE(pool.result().empty());
  pool.add(std::span(rows).subspan(0, 2), 0, 2);  // recomputed after preemption: already counted
  pool.add(rows, 0, 2);                            // again from the start, now reaching position 2
  ASSERT_TRUE(pool.complete());
  EXPECT_EQ(pool.result(), (std::vector<float>{2, 20}));
}

TEST(HiddenPool, LastTakesOnlyTheLastPosition) {
  HiddenPool pool(Pooling::kLast, 3);
  const std::vector<float> early = {7, 7};
  pool.add(early, 1, 2);
  EXPECT_FALSE(pool.complete());
  const std::vector<float> last = {4, 5};
  pool.add(last, 2, 2);
  ASSERT_TRUE(pool.complete());
  EXPECT_EQ(pool.result(), (std::vector<float>{4, 5}));
}

TEST(HiddenPool, RowsOfAnotherWidthAreIgnored) {
  HiddenPool pool(Pooling::kMean, 1);
  const std::vector<float> two = {1, 2}, three = {1, 2, 3};
  pool.add(three, 0, 2);  // not whole rows
  EXPECT_FALSE(pool.complete());
  pool.add(two, 0, 2);
  pool.add(three, 0, 3);  // a width that disagrees with the first
  EXPECT_EQ(pool.result(), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace tessera
