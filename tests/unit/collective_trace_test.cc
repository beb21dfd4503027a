#include "server/parallel/collective_trace.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "kernels/comm/collective_recorder.h"

namespace tessera {
namespace {

// A rank's dump as its recorder writes it, from records made by the test.
std::string dump_of(int rank, int world, const std::vector<TracedCollective>& records) {
  std::string out = "{\"rank\":" + std::to_string(rank) + ",\"world\":" + std::to_string(world) + ",\"model\":\"m\",\"collectives\":[";
  for (size_t i = 0; i < records.size(); ++i) {
    const TracedCollective& c = records[i];
    out += (i ? "," : "") + std::string("{\"seq\":") + std::to_string(c.seq) + ",\"op\":\"" + c.op + "\",\"bytes\":" +
           std::to_string(c.bytes) + ",\"peer\":-1,\"start_us\":" + std::to_string(c.start_us) +
           ",\"end_us\":" + std::to_string(c.end_us) + ",\"state\":\"" + c.state + "\"}";
  }
  return out + "]}";
}

TracedCollective record(uint64_t seq, const std::string& op, int64_t start_us, int64_t end_us, const std::string& state) {
  TracedCollective c;
  c.seq = seq;
  c.op = op;
  c.bytes = 64;
  c.start_us = start_us;
  c.end_us = end_us;
  c.state = state;
  return c;
}

std::vector<TraceVerdict> trace(const std::vector<std::string>& dumps) {
  std::vector<RankTrace> all;
  for (size_t i = 0; i < dumps.size(); ++i) {
    for (RankTrace& t : parse_rank_traces(dumps[i], "dump" + std::to_string(i))) all.push_back(std::move(t));
  }
  return trace_collectives(all);
}

TEST(CollectiveTrace, RanksThatAgreeAreReportedSo) {
  const auto v = trace({dump_of(0, 2, {record(1, "broadcast", 0, 5, "completed"), record(2, "all_gather", 6, 9, "completed")}),
                        dump_of(1, 2, {record(1, "broadcast", 1, 5, "completed"), record(2, "all_gather", 6, 9, "completed")})});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].agreed);
  EXPECT_NE(v[0].text.find("#1..#2"), std::string::npos);
}

TEST(CollectiveTrace, ARankThatNeverArrivedIsNamed) {
  const auto v = trace({dump_of(0, 2, {record(7, "all_gather", 0, 5, "completed"), record(8, "all_reduce", 6, 2'000'006, "failed")}),
                        dump_of(1, 2, {record(7, "all_gather", 1, 5, "completed")})});
  ASSERT_FALSE(v[0].agreed);
  EXPECT_EQ(v[0].seq, 8u);
  EXPECT_EQ(v[0].stuck_ranks, std::vector<int>{1});
  EXPECT_NE(v[0].text.find("rank 1 never started it"), std::string::npos);
}

TEST(CollectiveTrace, TheLateStarterIsNamed) {
  // Rank 2 reached collective 4 three seconds after the others.
  const auto v = trace({dump_of(0, 3, {record(4, "all_gather", 1'000'000, 3'000'000, "failed")}),
                        dump_of(1, 3, {record(4, "all_gather", 1'000'100, 3'000'100, "failed")}),
                        dump_of(2, 3, {record(4, "all_gather", 4'000'000, 4'000'500, "completed")})});
  ASSERT_FALSE(v[0].agreed);
  EXPECT_EQ(v[0].stuck_ranks, std::vector<int>{2});
}

TEST(CollectiveTrace, TheRankStuckInsideACollectiveIsNamed) {
  // Both started together; rank 1 stopped inside it and never finished.
  const auto v = trace({dump_of(0, 2, {record(3, "all_gather", 100, 200, "completed"), record(4, "barrier", 300, 2'000'300, "failed")}),
                        dump_of(1, 2, {record(3, "all_gather", 110, 0, "started")})});
  ASSERT_FALSE(v[0].agreed);
  EXPECT_EQ(v[0].seq, 3u);
  EXPECT_EQ(v[0].stuck_ranks, std::vector<int>{1});
}

TEST(CollectiveTrace, DifferentOperationsAtOneNumberAreADisagreement) {
  const auto v = trace({dump_of(0, 2, {record(1, "broadcast", 0, 5, "completed")}),
                        dump_of(1, 2, {record(1, "all_reduce", 0, 5, "completed")})});
  ASSERT_FALSE(v[0].agreed);
  EXPECT_NE(v[0].text.find("disagree at collective #1"), std::string::npos);
}

TEST(CollectiveTrace, AFarJumpInNumbersCostsNoMoreThanItsRecords) {
  const uint64_t far = uint64_t(1) << 62;
  const auto v = trace({dump_of(0, 2, {record(1, "barrier", 0, 5, "completed"), record(far, "barrier", 6, 9, "completed")}),
                        dump_of(1, 2, {record(1, "barrier", 0, 5, "completed"), record(far, "barrier", 6, 9, "completed")})});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].agreed);
}

TEST(CollectiveTrace, RecordsFromTheRecorderItselfParse) {
  CollectiveRecorder recorder(1, 2, 4);
  for (int i = 0; i < 6; ++i) recorder.finish(recorder.start(CollectiveOp::kAllReduce, 16, -1), CollectiveState::kCompleted);
  const std::vector<RankTrace> t = parse_rank_traces(recorder.dump_json(), "live");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rank, 1);
  ASSERT_EQ(t[0].collectives.size(), 4u);
  EXPECT_EQ(t[0].collectives.front().seq, 3u);
  EXPECT_EQ(t[0].collectives.back().op, "all_reduce");
}

TEST(CollectiveTrace, MalformedDumpsAreRefused) {
  for (const std::string& bad : std::vector<std::string>{"", "[]", "{\"rank\":0}", "{\"rank\":5,\"world\":2,\"collectives\":[]}",
                                dump_of(0, 2, {record(2, "barrier", 0, 1, "completed"), record(1, "barrier", 0, 1, "completed")})}) {
    EXPECT_THROW(parse_rank_traces(bad, "bad"), Error) << bad;
  }
  EXPECT_THROW(trace({dump_of(0, 2, {}), dump_of(0, 2, {})}), Error);
}

}  // namespace
}  // namespace tessera
