#include "server/http/connection_admission.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera {
namespace {

TEST(ConnectionAdmission, CapsPerClientThenReserveThenRefusal) {
  auto book = std::make_shared<ConnectionAdmission>(AdmissionCaps{.max_connections = 3, .max_per_client = 2, .reserved = 1});
  std::vector<ConnectionAdmission::Ticket> held;
  held.push_back(book->admit("a"));
  held.push_back(book->admit("a"));
  EXPECT_EQ(held.back().admission(), AdmissionClass::kFull);
  ConnectionAdmission::Ticket third = book->admit("a");  // over a's share: reserve
  EXPECT_EQ(third.admission(), AdmissionClass::kReserved);
  third.mark_busy();
  EXPECT_EQ(book->admit("b").admission(), AdmissionClass::kFull);  // released at once
  held.push_back(book->admit("b"));
  EXPECT_EQ(held.back().admission(), AdmissionClass::kFull);
  // Cap full, reserve held by a busy connection: refused.
  EXPECT_EQ(book->admit("c").admission(), AdmissionClass::kRefused);
  EXPECT_EQ(book->open(), 4);
  held.clear();
  EXPECT_EQ(book->open(), 1);
}

TEST(ConnectionAdmission, AWaitingReservedConnectionHandsItsPlaceOn) {
  auto book = std::make_shared<ConnectionAdmission>(AdmissionCaps{.max_connections = 1, .max_per_client = 1, .reserved = 1});
  ConnectionAdmission::Ticket full = book->admit("x");
  int evicted = 0;
  auto evict = std::make_shared<std::function<void()>>([&] { ++evicted; });
  auto idle = std::make_unique<ConnectionAdmission::Ticket>(book->admit("x", evict));
  ASSERT_EQ(idle->admission(), AdmissionClass::kReserved);
  ConnectionAdmission::Ticket probe = book->admit("x");
  EXPECT_EQ(probe.admission(), AdmissionClass::kReserved);
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(book->open(), 2);
  idle.reset();  // the evicted connection ends later: its place is not freed twice
  EXPECT_EQ(book->open(), 2);
  probe.mark_busy();
  EXPECT_EQ(book->admit("y").admission(), AdmissionClass::kRefused);
}

}  // namespace
}  // namespace tessera
