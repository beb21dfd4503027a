#pragma once
// The OpenCL API as the XPU backend uses it: the headers at version 3.0,
// errors turned into tessera::Error, and small owners for the handles.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <string>
#include <utility>
#include <vector>

namespace tessera::xpu {

std::string cl_error_name(cl_int status);

// Throws tessera::Error "xpu: <what>: <error name>" unless status is CL_SUCCESS.
void check(cl_int status, const std::string& what);

std::string device_string(cl_device_id device, cl_device_info what);
std::string platform_string(cl_platform_id platform, cl_platform_info what);

template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  check(clGetDeviceInfo(device, what, sizeof(T), &value, nullptr), "device info");
  return value;
}

bool has_extension(cl_device_id device, const std::string& name);

// A handle released by `Release` when the owner goes.
template <typename Handle, cl_int (*Release)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) reset(std::exchange(other.handle_, nullptr));
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(nullptr); }

  Handle get() const { return handle_; }
  void reset(Handle handle) {
    if (handle_) Release(handle_);
    handle_ = handle;
  }

 private:
  Handle handle_ = nullptr;
};

using ContextHandle = Owned<cl_context, clReleaseContext>;
using QueueHandle = Owned<cl_command_queue, clReleaseCommandQueue>;
using ProgramHandle = Owned<cl_program, clReleaseProgram>;
using KernelHandle = Owned<cl_kernel, clReleaseKernel>;
using EventHandle = Owned<cl_event, clReleaseEvent>;

}  // namespace tessera::xpu
