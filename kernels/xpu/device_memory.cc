#include "kernels/xpu/device_memory.h"

#include "engine/core/error.h"

namespace tessera::xpu {

template <typename Fn>
Fn DeviceMemory::extension_function(const char* name) {
  auto* fn = reinterpret_cast<Fn>(clGetExtensionFunctionAddressForPlatform(platform_, name));
  if (!fn) throw Error(std::string("xpu: the driver lists unified shared memory but has no ") + name);
  return fn;
}

DeviceMemory::DeviceMemory(const OpenclDevice& device, cl_context context)
    : model_(device.memory), platform_(device.platform), device_(device.device), context_(context) {
  if (model_ == MemoryModel::kUsm) {
    usm_alloc_ = extension_function<clDeviceMemAllocINTEL_fn>("clDeviceMemAllocINTEL");
    usm_free_ = extension_function<clMemBlockingFreeINTEL_fn>("clMemBlockingFreeINTEL");
    usm_copy_ = extension_function<clEnqueueMemcpyINTEL_fn>("clEnqueueMemcpyINTEL");
    usm_fill_ = extension_function<clEnqueueMemFillINTEL_fn>("clEnqueueMemFillINTEL");
    usm_set_arg_ = extension_function<clSetKernelArgMemPointerINTEL_fn>("clSetKernelArgMemPointerINTEL");
  }
}

void* DeviceMemory::allocate(size_t bytes) {
  void* p = nullptr;
  const std::string what = "allocate " + std::to_string(bytes) + " bytes";
  if (model_ == MemoryModel::kUsm) {
    cl_int status = CL_SUCCESS;
    p = usm_alloc_(context_, device_, nullptr, bytes, 0, &status);
    check(status, what);
  } else {
    p = clSVMAlloc(context_, CL_MEM_READ_WRITE, bytes, 0);
  }
  if (!p) throw Error("xpu: " + what + ": the device has no room");
  std::lock_guard lock(mutex_);
  sizes_[p] = bytes;
  in_use_ += bytes;
  return p;
}

void DeviceMemory::release(void* ptr) {
  if (!ptr) return;
  if (model_ == MemoryModel::kUsm) usm_free_(context_, ptr);
  else clSVMFree(context_, ptr);
  std::lock_guard lock(mutex_);
  if (auto it = sizes_.find(ptr); it != sizes_.end()) {
    in_use_ -= it->second;
    sizes_.erase(it);
  }
}

uint64_t DeviceMemory::bytes_in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void DeviceMemory::copy(cl_command_queue queue, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (model_ == MemoryModel::kUsm) check(usm_copy_(queue, CL_TRUE, dst, src, bytes, 0, nullptr, nullptr), "copy");
  else check(clEnqueueSVMMemcpy(queue, CL_TRUE, dst, src, bytes, 0, nullptr, nullptr), "copy");
}

void DeviceMemory::fill_zero(cl_command_queue queue, void* dst, size_t bytes) {
  if (bytes == 0) return;
  const cl_uchar zero = 0;
  if (model_ == MemoryModel::kUsm) check(usm_fill_(queue, dst, &zero, 1, bytes, 0, nullptr, nullptr), "fill");
  else check(clEnqueueSVMMemFill(queue, dst, &zero, 1, bytes, 0, nullptr, nullptr), "fill");
}

void DeviceMemory::set_pointer_arg(cl_kernel kernel, cl_uint index, const void* ptr) {
  const cl_int status = model_ == MemoryModel::kUsm ? usm_set_arg_(kernel, index, ptr) : clSetKernelArgSVMPointer(kernel, index, ptr);
  if (status != CL_SUCCESS) check(status, "pointer argument " + std::to_string(index));
}

}  // namespace tessera::xpu
