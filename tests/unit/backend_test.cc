#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/error.h"
#include "kernels/backend_registry.h"

namespace tessera {
namespace {

TEST(BackendRegistry, CpuIsAlwaysThere) {
  const auto backends = available_backends();
  ASSERT_FALSE(backends.empty());
  EXPECT_EQ(backends[0].kind, kCpuDevice);
  auto cpu = create_backend({kCpuDevice, 0});
  EXPECT_EQ(cpu->device().kind, kCpuDevice);
  EXPECT_NE(cpu->describe().find("isa"), std::string::npos);
}

TEST(BackendRegistry, AbsentDeviceIsAClearError) {
  try {
    create_backend({kCpuDevice, 3});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu:3"), std::string::npos) << e.what();
  }
  // No machine here has a ROCm device: where the HIP plugin was built and
  // loaded the error says why it found none, elsewhere that there is no
  // backend at all.
  bool hip_loaded = false;
  for (const BackendFactory& f : available_backends()) hip_loaded |= f.kind == DeviceKind("hip");
  try {
    create_backend({DeviceKind("hip"), 0});
    FAIL();
  } catch (const Error& e) {
    const std::string why = hip_loaded ? "hip:0: not present (0 hip device(s) found; " : "hip:0: this build has no backend for it";
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(Backend, BufferCopiesRoundTrip) {
  auto cpu = create_backend({kCpuDevice, 0});
  DeviceBuffer buf(*cpu, 64);
  const char msg[] = "tessera";
  cpu->copy_host_to_device(buf.data(), msg, sizeof msg, cpu->default_stream());
  char back[sizeof msg] = {};
  cpu->copy_device_to_host(back, buf.data(), sizeof msg, cpu->default_stream());
  cpu->default_stream().synchronize();
  EXPECT_STREQ(back, msg);
}

}  // namespace
}  // namespace tessera
