#pragma once
// Launching a kernel of the program: arguments set in order from C++
// values (pointers as device pointers, scalars by value, each of the size
// its OpenCL parameter declares), then an ND-range on the queue. A kernel
// object holds its arguments, so setting and enqueueing happen under one lock.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <type_traits>

#include "kernels/xpu/device_memory.h"
#include "kernels/xpu/kernel_program.h"

namespace tessera::xpu {

struct Range {
  size_t global[2] = {1, 1};
  size_t local[2] = {0, 0};  // 0: the driver chooses
  cl_uint dims = 1;
};

// `n` work-items in groups of `group`, rounded up to whole groups.
Range linear_range(int64_t n, size_t group = 64);
// (x, y) work-items, x rounded up to groups of `group`.
Range grid_range(int64_t x, int64_t y, size_t group = 64);
// x × y work-groups of `group` work-items each.
Range groups_range(int64_t x, int64_t y, size_t group);

// What launching needs of the backend.
struct LaunchContext {
  DeviceMemory* memory;
  const KernelProgram* program;
  std::mutex* mutex;
  const void* placeholder;  // stands for null pointer arguments, which kernels never read
};

namespace detail {

template <typename T>
void set_arg(const LaunchContext& cx, cl_kernel kernel, cl_uint index, const T& value) {
  if constexpr (std::is_pointer_v<T>) {
    cx.memory->set_pointer_arg(kernel, index, value ? static_cast<const void*>(value) : cx.placeholder);
  } else {
    static_assert(std::is_arithmetic_v<T>, "kernel arguments are pointers or scalars");
    const cl_int status = clSetKernelArg(kernel, index, sizeof(T), &value);
    if (status != CL_SUCCESS) check(status, "argument " + std::to_string(index));
  }
}

}  // namespace detail

template <typename... Args>
void launch(const LaunchContext& cx, cl_command_queue queue, std::string_view name, const Range& range,
            const Args&... args) {
  cl_kernel kernel = cx.program->kernel(name);
  std::lock_guard lock(*cx.mutex);
  cl_uint index = 0;
  (detail::set_arg(cx, kernel, index++, args), ...);
  const size_t* local = range.local[0] ? range.local : nullptr;
  const cl_int status = clEnqueueNDRangeKernel(queue, kernel, range.dims, nullptr, range.global, local, 0, nullptr, nullptr);
  if (status != CL_SUCCESS) check(status, "launch " + std::string(name));
}

}  // namespace tessera::xpu
