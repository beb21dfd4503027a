#pragma once
// Device memory as plain pointers, whichever way the device offers it:
// Intel unified shared memory (device allocations) or coarse-grained shared
// virtual memory. Pointers into an allocation may be offset freely and are
// passed to kernels as such. Copies and fills are blocking: the host memory
// of a copy may go as soon as the call returns.
#include <cstddef>
#include <mutex>
#include <unordered_map>

#include "kernels/xpu/device_inventory.h"

namespace tessera::xpu {

class DeviceMemory {
 public:
  DeviceMemory(const OpenclDevice& device, cl_context context);

  void* allocate(size_t bytes);
  void release(void* ptr);
  // Any direction: host to device, device to host, device to device.
  void copy(cl_command_queue queue, void* dst, const void* src, size_t bytes);
  void fill_zero(cl_command_queue queue, void* dst, size_t bytes);
  // Passes `ptr` (device memory, or null) as pointer argument `index`.
  void set_pointer_arg(cl_kernel kernel, cl_uint index, const void* ptr);

  uint64_t bytes_in_use() const;

 private:
  template <typename Fn>
  Fn extension_function(const char* name);

  MemoryModel model_;
  cl_platform_id platform_;
  cl_device_id device_;
  cl_context context_;
  mutable std::mutex mutex_;
  std::unordered_map<const void*, size_t> sizes_;  // live allocations
  uint64_t in_use_ = 0;
  // Intel USM entry points, resolved through the platform.
  clDeviceMemAllocINTEL_fn usm_alloc_ = nullptr;
  clMemBlockingFreeINTEL_fn usm_free_ = nullptr;
  clEnqueueMemcpyINTEL_fn usm_copy_ = nullptr;
  clEnqueueMemFillINTEL_fn usm_fill_ = nullptr;
  clSetKernelArgMemPointerINTEL_fn usm_set_arg_ = nullptr;
};

}  // namespace tessera::xpu
