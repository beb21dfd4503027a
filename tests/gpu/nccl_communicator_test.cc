// NCCL collectives between GPU ranks: one rank on any GPU machine, two
// ranks (threads of this process) where the machine has two GPUs. Skipped,
// with a message, without a CUDA device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "kernels/backend_registry.h"
#include "tests/gpu/parity.h"

namespace tessera {
namespace {

using test::cuda_devices;

CommunicatorOptions options_for(int rank, int world, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-nccl-" + name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  CommunicatorOptions o;
  o.rank = rank;
  o.world = world;
  o.rendezvous = "file:" + dir.string();
  o.timeout = std::chrono::seconds(20);
  return o;
}

// `values` on the device, `run` on them (and an output of `out_count`
// floats), then the output back; with out_count 0, the input back.
std::vector<float> on_device(Backend& b, const std::vector<float>& values, size_t out_count,
                             const std::function<void(float* in, float* out)>& run) {
  const size_t in_bytes = values.size() * sizeof(float), out_bytes = std::max<size_t>(out_count, 1) * sizeof(float);
  DeviceBuffer in(b, in_bytes), out(b, out_bytes);
  b.copy_host_to_device(in.data(), values.data(), in_bytes, b.default_stream());
  run(in.data_as<float>(), out.data_as<float>());
  std::vector<float> result(out_count > 0 ? out_count : values.size());
  b.copy_device_to_host(result.data(), out_count > 0 ? out.data() : in.data(), result.size() * sizeof(float), b.default_stream());
  b.default_stream().synchronize();
  return result;
}

TEST(NcclCommunicator, OneRankCollectivesKeepTheirInput) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
  auto backend = create_backend({DeviceKind("cuda"), 0});
  auto comm = backend->create_communicator(options_for(0, 1, "one"));
  Stream& s = backend->default_stream();
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f};
  EXPECT_EQ(on_device(*backend, values, 0, [&](float* in, float*) { comm->all_reduce_sum(in, 4, s); }), values);
  EXPECT_EQ(on_device(*backend, values, 0, [&](float* in, float*) { comm->broadcast(in, 4 * sizeof(float), 0, s); }), values);
  EXPECT_EQ(on_device(*backend, values, 4, [&](float* in, float* out) { comm->all_gather(in, 4 * sizeof(float), out, s); }),
            values);
  EXPECT_EQ(on_device(*backend, values, 4, [&](float* in, float* out) { comm->reduce_scatter_sum(in, out, 4, s); }), values);
  comm->barrier();
  const std::vector<CollectiveRecord> records = comm->recorder().records();
  ASSERT_EQ(records.size(), 5u);
  for (const CollectiveRecord& r : records) EXPECT_EQ(r.state, CollectiveState::kCompleted);
}

TEST(NcclCommunicator, TwoRanksSumGatherAndPassAlong) {
  if (cuda_devices() < 2) GTEST_SKIP() << "fewer than two CUDA devices: the two-rank NCCL test is skipped";
  std::vector<std::vector<float>> sums(2), gathered(2), received(2);
  auto rank_main = [&](int rank) {
    auto backend = create_backend({DeviceKind("cuda"), rank});
    auto comm = backend->create_communicator(options_for(rank, 2, "two"));
    Stream& s = backend->default_stream();
    const std::vector<float> mine = {float(rank + 1), float(10 * (rank + 1))};
    sums[size_t(rank)] = on_device(*backend, mine, 0, [&](float* in, float*) { comm->all_reduce_sum(in, 2, s); });
    gathered[size_t(rank)] =
        on_device(*backend, mine, 4, [&](float* in, float* out) { comm->all_gather(in, 2 * sizeof(float), out, s); });
    received[size_t(rank)] = on_device(*backend, mine, 2, [&](float* in, float* out) {
      if (rank == 0) comm->send(in, 2 * sizeof(float), 1, s);
      else comm->recv(out, 2 * sizeof(float), 0, s);
    });
    comm->barrier();
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  EXPECT_EQ(sums[0], (std::vector<float>{3, 30}));
  EXPECT_EQ(sums[1], sums[0]);
  EXPECT_EQ(gathered[0], (std::vector<float>{1, 10, 2, 20}));
  EXPECT_EQ(gathered[1], gathered[0]);
  EXPECT_EQ(received[1], (std::vector<float>{1, 10}));
}

}  // namespace
}  // namespace tessera
