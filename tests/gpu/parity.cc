#include "tests/gpu/parity.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kernels/backend_plugins.h"


namespace tessera::test {

int cuda_devices() {
  for (const BackendFactory& f : available_backends()) {
    if (f.kind == DeviceKind("cuda")) return f.device_count();
  }
  return 0;
}

std::vector<std::string> accelerator_names() {
  std::vector<std::string> names;
  for (const BackendFactory& f : available_backends()) {
    if (f.kind != kCpuDevice && f.device_count() > 0) names.push_back(f.name + ":0");
  }
  return names;
}

void Parity::SetUp() {
  cpu_ = create_backend(parse_device("cpu"), BackendOptions{2});
  gpu_ = create_backend(parse_device(GetParam()));
}

size_t bit_differences(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::max(got.size(), want.size());
  size_t n = 0;
  for (size_t i = 0; i < got.size(); ++i) n += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  return n;
}

double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return INFINITY;
  double scale = 0.0, worst = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    if (!(diff <= worst)) worst = std::isnan(diff) ? INFINITY : diff;
  }
  return scale > 0.0 ? worst / scale : worst;
}

// TESSERA_EXPECT_BACKENDS (e.g. "cuda") names the backends this machine
// must have a device for. Where one is missing the parity suites would not
// be instantiated and the run would pass having tested nothing; this test
// fails instead, with the plugin loader's reasons.
TEST(AcceleratorPresence, EveryExpectedBackendHasADevice) {
  const char* expected = std::getenv("TESSERA_EXPECT_BACKENDS");
  if (!expected || !*expected) GTEST_SKIP() << "TESSERA_EXPECT_BACKENDS is not set: no backend is required here";
  std::ostringstream loader;
  for (const PluginReport& r : backend_plugins().reports) {
    loader << "\n  " << r.path << ": " << (r.loaded ? "loaded " + r.backend : "not loaded: " + r.reason);
    if (!r.unusable_devices.empty()) loader << " (" << r.unusable_devices << ")";
  }
  std::stringstream names(expected);
  const std::vector<std::string> present = accelerator_names();
  for (std::string name; std::getline(names, name, ',');) {
    const bool found = std::find(present.begin(), present.end(), name + ":0") != present.end();
    EXPECT_TRUE(found) << "no device for backend '" << name << "'; plugins:" << loader.str();
  }
}

}  // namespace tessera::test
