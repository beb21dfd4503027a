#include "kernels/xpu/device_inventory.h"

#include "engine/error.h"

namespace tessera::xpu {
namespace {

// Why `device` cannot serve, or empty when it can; fills `out`.
std::string examine(cl_platform_id platform, cl_device_id device, OpenclDevice& out) {
  out.platform = platform;
  out.device = device;
  out.name = device_string(device, CL_DEVICE_NAME);
  out.platform_name = platform_string(platform, CL_PLATFORM_NAME);
  out.driver_version = device_string(device, CL_DRIVER_VERSION);
  out.device_version = device_string(device, CL_DEVICE_VERSION);
  out.fp64 = has_extension(device, "cl_khr_fp64");
  if (!device_value<cl_bool>(device, CL_DEVICE_AVAILABLE)) return "not available";
  if (!device_value<cl_bool>(device, CL_DEVICE_COMPILER_AVAILABLE)) return "has no OpenCL C compiler";
  if (has_extension(device, "cl_intel_unified_shared_memory")) {
    out.memory = MemoryModel::kUsm;
    return {};
  }
  // SVM capabilities exist from OpenCL 2.0; older devices report an error.
  cl_device_svm_capabilities svm = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof(svm), &svm, nullptr) == CL_SUCCESS &&
      (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
    out.memory = MemoryModel::kSvm;
    return {};
  }
  return "has neither unified shared memory nor shared virtual memory (" + out.device_version + ")";
}

DeviceInventory discover() {
  DeviceInventory inventory;
  cl_uint n_platforms = 0;
  const cl_int status = clGetPlatformIDs(0, nullptr, &n_platforms);
  if (status != CL_SUCCESS || n_platforms == 0) {
    inventory.unusable.push_back("no OpenCL platform: " +
                                 (status != CL_SUCCESS ? cl_error_name(status) : std::string("the ICD loader lists none")) +
                                 " (install an OpenCL driver: intel-opencl-icd for Intel GPUs, pocl-opencl-icd for CPUs)");
    return inventory;
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  check(clGetPlatformIDs(n_platforms, platforms.data(), nullptr), "list platforms");
  for (cl_platform_id platform : platforms) {
    cl_uint n_devices = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n_devices) != CL_SUCCESS || n_devices == 0) continue;
    std::vector<cl_device_id> devices(n_devices);
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n_devices, devices.data(), nullptr), "list devices");
    for (cl_device_id device : devices) {
      OpenclDevice found;
      std::string refusal;
      try {
        refusal = examine(platform, device, found);
      } catch (const Error& e) {
        refusal = e.what();
      }
      if (refusal.empty()) inventory.usable.push_back(found);
      else inventory.unusable.push_back(found.name + " (" + found.platform_name + "): " + refusal);
    }
  }
  if (inventory.usable.empty() && inventory.unusable.empty()) inventory.unusable.push_back("no OpenCL device on any platform");
  return inventory;
}

}  // namespace

const DeviceInventory& device_inventory() {
  static const DeviceInventory inventory = discover();
  return inventory;
}

}  // namespace tessera::xpu
