#pragma once
// The backend parity suite's harness: the CPU backend is the reference, and
// each op runs on it and on every other compiled backend that has a device
// here, from the same inputs. Suites skip, saying so, where none has one.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend_registry.h"
#include "tests/gpu/random_weights.h"

namespace tessera::test {

// The compiled accelerator backends with a device on this machine.
std::vector<std::string> accelerator_names();
// CUDA devices on this machine (0 without a driver).
int cuda_devices();

class Parity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // A device copy of `values` on `backend`, freed with the test.
  template <typename T>
  T* upload(Backend& backend, const std::vector<T>& values) {
    buffers_.emplace_back(backend, std::max<size_t>(values.size() * sizeof(T), 1));
    backend.copy_host_to_device(buffers_.back().data(), values.data(), values.size() * sizeof(T), backend.default_stream());
    return buffers_.back().template data_as<T>();
  }
  template <typename T>
  T* zeros(Backend& backend, size_t n) {
    return upload(backend, std::vector<T>(n));
  }
  template <typename T>
  std::vector<T> download(Backend& backend, const T* device, size_t n) {
    std::vector<T> host(n);
    backend.copy_device_to_host(host.data(), device, n * sizeof(T), backend.default_stream());
    backend.default_stream().synchronize();
    return host;
  }

  std::unique_ptr<Backend> cpu_, gpu_;
  std::vector<DeviceBuffer> buffers_;
  std::mt19937 rng_{1234};
};

// Elements whose bits differ (all of them when the sizes differ).
size_t bit_differences(const std::vector<float>& got, const std::vector<float>& want);

// Largest |got - want| relative to max(|want|) over all elements; fails
// when the sizes differ.
double max_relative_error(const std::vector<float>& got, const std::vector<float>& want);

}  // namespace tessera::test

// Instantiates a parity suite for each accelerator backend with a device
// here (GoogleTest reports a suite with no instances as skipped).
#define TESSERA_PARITY_SUITE(suite)                    \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(suite); \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::ValuesIn(::tessera::test::accelerator_names()))
