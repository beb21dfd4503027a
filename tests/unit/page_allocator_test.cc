#include <gtest/gtest.h>

#include <set>

#include "scheduler/page_allocator.h"

namespace tessera {
namespace {

TEST(PageAllocator, HandsOutEveryPageOnceThenRunsOut) {
  PageAllocator a(4);
  std::set<int32_t> got;
  for (int i = 0; i < 4; ++i) got.insert(*a.allocate());
  EXPECT_EQ(got, (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(a.allocate().has_value());
  EXPECT_EQ(a.free_count(), 0);
}

TEST(PageAllocator, SharedPagesReturnAtZeroReferences) {
  PageAllocator a(2);
  const int32_t page = *a.allocate();
  a.retain(page);
  EXPECT_EQ(a.ref_count(page), 2);
  a.release(page);
  EXPECT_EQ(a.free_count(), 1);
  a.release(page);
  EXPECT_EQ(a.free_count(), 2);
  EXPECT_THROW(a.release(page), std::logic_error);
}

}  // namespace
}  // namespace tessera
