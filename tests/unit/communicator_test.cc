// The gloo communicator between ranks run as threads of this process,
// meeting through a file store or the TCP store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "kernels/cpu/runtime/cpu_backend.h"
#include "kernels/comm/gloo_communicator.h"
#include "kernels/comm/tcp_store.h"
#include "tests/unit/free_port.h"

namespace tessera {
namespace {

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

// Runs body(rank, communicator, stream) on `world` ranks at once; rethrows
// the first failure.
void on_ranks(int world, const std::string& rendezvous, std::chrono::milliseconds timeout,
              const std::function<void(int, Communicator&, Stream&)>& body) {
  std::vector<std::exception_ptr> failure(static_cast<size_t>(world));
  std::vector<std::thread> ranks(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    ranks[size_t(r)] = std::thread([&, r] {
      try {
        cpu::CpuBackend backend(cpu::CpuBackendOptions{1, std::nullopt});
        CommunicatorOptions options;
        options.rank = r;
        options.world = world;
        options.rendezvous = rendezvous;
        options.rendezvous_secret = "test-secret";
        options.timeout = timeout;
        auto comm = backend.create_communicator(options);
        body(r, *comm, backend.default_stream());
      } catch (...) {
        failure[size_t(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (auto& f : failure) {
    if (f) std::rethrow_exception(f);
  }
}

void on_two_ranks(const std::string& rendezvous, std::chrono::milliseconds timeout,
                  const std::function<void(int, Communicator&, Stream&)>& body) {
  on_ranks(2, rendezvous, timeout, body);
}

void exercise_collectives(int rank, Communicator& comm, Stream& stream) {
  std::vector<float> sum = {float(rank + 1), 10.0f * float(rank + 1), -1.0f};
  comm.all_reduce_sum(sum.data(), sum.size(), stream);
  EXPECT_EQ(sum, (std::vector<float>{3.0f, 30.0f, -2.0f}));

  const int32_t mine[2] = {rank, 100 + rank};
  int32_t all[4] = {};
  comm.all_gather(mine, sizeof(mine), all, stream);
  EXPECT_EQ(std::vector<int32_t>(all, all + 4), (std::vector<int32_t>{0, 100, 1, 101}));

  std::vector<float> halves = {1.0f + float(rank), 2.0f, 3.0f, 4.0f * float(rank)};
  float out[2] = {};
  comm.reduce_scatter_sum(halves.data(), out, 2, stream);
  if (rank == 0) EXPECT_EQ(std::vector<float>(out, out + 2), (std::vector<float>{3.0f, 4.0f}));
  else EXPECT_EQ(std::vector<float>(out, out + 2), (std::vector<float>{6.0f, 4.0f}));

  char text[6] = {};
  if (rank == 1) std::memcpy(text, "hello", 6);
  comm.broadcast(text, sizeof(text), 1, stream);
  EXPECT_STREQ(text, "hello");

  uint64_t message = rank == 0 ? 0xfeedu : 0;
  if (rank == 0) comm.send(&message, sizeof(message), 1, stream);
  else comm.recv(&message, sizeof(message), 0, stream);
  EXPECT_EQ(message, 0xfeedu);
  comm.barrier();

  const auto records = comm.recorder().records();
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].op, CollectiveOp::kAllReduce);
  EXPECT_EQ(records[4].op, rank == 0 ? CollectiveOp::kSend : CollectiveOp::kRecv);
  for (const CollectiveRecord& r : records) EXPECT_EQ(r.state, CollectiveState::kCompleted);
}

TEST(GlooCommunicator, CollectivesThroughAFileStore) {
  on_two_ranks("file:" + fresh_dir("gloo-file"), std::chrono::seconds(20), exercise_collectives);
}

TEST(GlooCommunicator, CollectivesThroughTheTcpStore) {
  const int port = free_loopback_port();
  on_two_ranks("tcp:127.0.0.1:" + std::to_string(port), std::chrono::seconds(20), exercise_collectives);
}

// Rank 1 leaves the second all-reduce to rank 0 alone, either by closing
// (its communicator destroyed) or by hanging past the timeout (for 5 s,
// well past `max_seconds`). Rank 0's time is taken over the second
// all-reduce alone, so a slow start on a loaded machine cannot fail it.
void second_collective_alone(bool hang, double max_seconds) {
  const auto timeout = std::chrono::milliseconds(1000);
  std::string rank0_error;
  std::vector<CollectiveRecord> rank0_records;
  double rank0_seconds = 0;
  on_two_ranks("file:" + fresh_dir(hang ? "gloo-hang" : "gloo-close"), timeout, [&](int rank, Communicator& comm, Stream& stream) {
    float x = 1.0f;
    comm.all_reduce_sum(&x, 1, stream);
    if (rank == 1) {
      if (hang) std::this_thread::sleep_for(std::chrono::milliseconds(5000));
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.all_reduce_sum(&x, 1, stream);
    } catch (const CollectiveError& e) {
      rank0_error = e.what();
    }
    rank0_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rank0_records = comm.recorder().records();
  });
  EXPECT_NE(rank0_error.find("all_reduce #2"), std::string::npos) << rank0_error;
  ASSERT_EQ(rank0_records.size(), 2u);
  EXPECT_EQ(rank0_records[0].state, CollectiveState::kCompleted);
  EXPECT_EQ(rank0_records[1].state, CollectiveState::kFailed);
  EXPECT_LT(rank0_seconds, max_seconds);
}

// Larger than the socket buffers: both ranks send at once, so these go in
// chunks; each value is checked in place.
TEST(GlooCommunicator, LargeCollectivesDoNotDeadlock) {
  on_two_ranks("file:" + fresh_dir("gloo-large"), std::chrono::seconds(20), [](int rank, Communicator& comm, Stream& stream) {
    const size_t n = (size_t(3) << 20) / sizeof(float) + 7;  // 3 MiB and a ragged end
    std::vector<float> mine(n), all(2 * n);
    for (size_t i = 0; i < n; ++i) mine[i] = float(rank) * 1e6f + float(i % 100000);
    comm.all_gather(mine.data(), n * sizeof(float), all.data(), stream);
    for (size_t r = 0; r < 2; ++r) {
      for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(all[r * n + i], float(r) * 1e6f + float(i % 100000)) << r << " " << i;
      ASSERT_EQ(all[r * n + n - 1], float(r) * 1e6f + float((n - 1) % 100000));
    }
    std::vector<float> sum(n, float(rank + 1));
    comm.all_reduce_sum(sum.data(), n, stream);
    EXPECT_EQ(std::count(sum.begin(), sum.end(), 3.0f), std::ptrdiff_t(n));
  });
}

// All-gathers go straight to each peer, one slot per chunk, with no
// notification after: three ranks arriving at different times, gathers of
// several sizes (one over a chunk) between point-to-point messages and
// all-reduces, every value checked where it lands.
TEST(GlooCommunicator, AllGathersAmongThreeRanksKeepTheirOrder) {
  on_ranks(3, "file:" + fresh_dir("gloo-three"), std::chrono::seconds(20), [](int rank, Communicator& comm, Stream& stream) {
    const size_t sizes[] = {1, 37, 288, (size_t(80) << 10) / sizeof(float) + 3};
    for (int round = 0; round < 24; ++round) {
      if ((round + rank) % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300 * (rank + 1)));
      const size_t n = sizes[size_t(round) % std::size(sizes)];
      std::vector<float> mine(n), all(3 * n, -1.0f);
      for (size_t i = 0; i < n; ++i) mine[i] = float(round * 1000 + rank * 100) + float(i % 97);
      comm.all_gather(mine.data(), n * sizeof(float), all.data(), stream);
      for (size_t r = 0; r < 3; ++r) {
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(all[r * n + i], float(round * 1000 + int(r) * 100) + float(i % 97)) << round << " " << r << " " << i;
        }
      }
      int token = round * 10 + rank;
      comm.send(&token, sizeof(token), (rank + 1) % 3, stream);
      comm.recv(&token, sizeof(token), (rank + 2) % 3, stream);
      ASSERT_EQ(token, round * 10 + (rank + 2) % 3);
      float x = float(rank + round);
      comm.all_reduce_sum(&x, 1, stream);
      ASSERT_EQ(x, float(3 * round + 3));
    }
  });
}

TEST(GlooCommunicator, AClosedPeerFailsTheCollective) { second_collective_alone(false, 10.0); }

TEST(GlooCommunicator, AHungPeerTimesOut) { second_collective_alone(true, 2.8); }

TEST(CollectiveRecorder, KeepsTheNewestRecordsOldestFirst) {
  CollectiveRecorder recorder(0, 2, 3);
  for (int i = 0; i < 5; ++i) recorder.finish(recorder.start(CollectiveOp::kAllReduce, uint64_t(i), -1), CollectiveState::kCompleted);
  const uint64_t open = recorder.start(CollectiveOp::kBroadcast, 8, 0);
  const auto records = recorder.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].seq, 4u);
  EXPECT_EQ(records[2].seq, open);
  EXPECT_EQ(records[2].state, CollectiveState::kStarted);
  EXPECT_NE(recorder.dump_json().find("\"op\": \"broadcast\""), std::string::npos);
}

TEST(TcpStore, HoldsAtMost64MiB) {
  const int port = free_loopback_port();
  cpu::TcpStore store("127.0.0.1:" + std::to_string(port), true, std::chrono::seconds(5), "test-secret");
  const std::vector<char> mib(size_t(1) << 20, 'x');
  for (int i = 0; i < 63; ++i) store.set("k" + std::to_string(i), mib);
  store.set("k0", mib);  // replacing a value takes no more room
  EXPECT_EQ(store.get("k62").size(), mib.size());
  EXPECT_THROW(store.set("k63", mib), std::runtime_error);
}

TEST(GlooCommunicator, RefusesABadRendezvous) {
  CommunicatorOptions options;
  options.world = 1;
  options.rendezvous = "redis:x";
  EXPECT_THROW(cpu::GlooCommunicator{options}, CollectiveError);
  options.rank = 3;
  EXPECT_THROW(cpu::GlooCommunicator{options}, CollectiveError);
}

}  // namespace
}  // namespace tessera
