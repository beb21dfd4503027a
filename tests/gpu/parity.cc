#include "tests/gpu/parity.h"

#include <algorithm>
#include <cstring>


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

}  // namespace tessera::test
