// The CUDA backend against the CPU reference. Skipped, with a message, on a
// machine without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/backend_registry.h"
#include "tests/gpu/parity.h"
#include "quant/dequantize.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

using test::cuda_devices;

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device on this machine: GPU tests skipped";
    backend_ = create_backend({DeviceKind("cuda"), 0});
  }
  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaBackend, DescribesTheDevice) {
  const std::string text = backend_->describe();
  EXPECT_NE(text.find("sm_"), std::string::npos) << text;
  std::printf("%s\n", text.c_str());
}

class CudaDequantize : public CudaBackend, public ::testing::WithParamInterface<std::string> {};

TEST_P(CudaDequantize, BitIdenticalToCpuReference) {
  const std::vector<uint8_t> blocks = test::read_bytes(test::data_path("dequant/" + GetParam() + ".bin"));
  DType dtype = DType::kF32;
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto d = dtype_from_gguf(id); d && dtype_name(*d) == GetParam()) dtype = *d;
  }
  ASSERT_TRUE(backend_->supports(Op::kDequantize, dtype));
  const DTypeInfo& info = dtype_info(dtype);
  const int64_t n = int64_t(blocks.size() / info.block_bytes * info.block_elems);
  std::vector<float> want(static_cast<size_t>(n));
  dequantize_row(dtype, blocks.data(), want.data(), n);

  DeviceBuffer src(*backend_, blocks.size());
  DeviceBuffer dst(*backend_, size_t(n) * sizeof(float));
  Stream& stream = backend_->default_stream();
  backend_->copy_host_to_device(src.data(), blocks.data(), blocks.size(), stream);
  backend_->kernels().dequantize({src.data(), dtype, dst.data_as<float>(), n}, stream);
  std::vector<float> got(static_cast<size_t>(n));
  backend_->copy_device_to_host(got.data(), dst.data(), got.size() * sizeof(float), stream);
  stream.synchronize();
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Types, CudaDequantize,
                         ::testing::Values("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q4_K", "Q6_K"));

// A recording (CUDA graph) runs nothing while recorded, and each replay
// reads what the buffers hold then.
TEST_F(CudaBackend, RecordingReplaysWithTheBuffersOfTheMoment) {
  const int64_t n = 1000;
  DeviceBuffer x(*backend_, n * sizeof(float)), y(*backend_, n * sizeof(float));
  Stream& stream = backend_->default_stream();
  std::vector<float> ones(n, 1.0f), got(n);
  backend_->copy_host_to_device(x.data(), ones.data(), n * sizeof(float), stream);
  backend_->copy_host_to_device(y.data(), ones.data(), n * sizeof(float), stream);
  auto recording = backend_->record(stream, [&] {
    backend_->kernels().add({x.data_as<float>(), y.data_as<float>(), n}, stream);
    backend_->kernels().scale({x.data_as<float>(), n, 3.0f}, stream);
  });
  ASSERT_NE(recording, nullptr);
  backend_->copy_device_to_host(got.data(), x.data(), n * sizeof(float), stream);
  stream.synchronize();
  EXPECT_EQ(got[7], 1.0f) << "recording ran the work";
  recording->replay(stream);  // (1 + 1) * 3
  std::vector<float> twos(n, 2.0f);
  backend_->copy_host_to_device(y.data(), twos.data(), n * sizeof(float), stream);
  recording->replay(stream);  // (6 + 2) * 3
  backend_->copy_device_to_host(got.data(), x.data(), n * sizeof(float), stream);
  stream.synchronize();
  EXPECT_EQ(got[0], 24.0f);
  EXPECT_EQ(got[n - 1], 24.0f);
}

TEST_F(CudaBackend, UnsupportedTypeIsRefusedUpFront) {
  EXPECT_FALSE(backend_->supports(Op::kDequantize, DType::kQ3_K));
}

}  // namespace
}  // namespace tessera
