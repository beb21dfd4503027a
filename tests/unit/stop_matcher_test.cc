#include <gtest/gtest.h>

#include "server/serving/stop_matcher.h"

namespace tessera {
namespace {

// Feeds `pieces` one by one; returns everything emitted, flush included.
std::string feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.flush();
}

TEST(StopMatcher, CutsAtTheFirstStopStringAcrossPieces) {
  StopMatcher m({"END"});
  EXPECT_EQ(feed(m, {"hello E", "N", "D and more"}), "hello ");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, ReleasesHeldTextOnceItCannotStartAStop) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("abc ST"), "abc ");
  EXPECT_EQ(m.push("x"), "STx");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWinsAndNothingFollows) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(feed(m, {"hel", "lo world"}), "hel");
  EXPECT_EQ(m.push("more"), "");
}

TEST(StopMatcher, HeldPrefixIsFlushedAtTheEnd) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("text </"), "text ");
  EXPECT_EQ(m.flush(), "</");
}

TEST(StopMatcher, MultibyteStopStringsKeepCharactersWhole) {
  StopMatcher m({"世界"});
  EXPECT_EQ(m.push("你好世"), "你好");
  EXPECT_EQ(m.push("纪"), "世纪");
  EXPECT_EQ(feed(m, {"世", "界!"}), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, IncludeStopEndsWithTheEarliestStopString) {
  StopMatcher kept({"END", "ND!"}, /*include_stop=*/true);
  EXPECT_EQ(kept.push("text E"), "text ");
  EXPECT_EQ(kept.push("ND! more"), "END");
  EXPECT_TRUE(kept.stopped());
  EXPECT_EQ(kept.matched(), "END");
  EXPECT_EQ(kept.flush(), "");
  StopMatcher cut({"END", "ND!"});
  EXPECT_EQ(feed(cut, {"text E", "ND! more"}), "text ");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("anything"), "anything");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace tessera
