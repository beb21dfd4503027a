#include "kernels/xpu/device_inventory.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

namespace tessera::xpu {
namespace {

// Whether the device runs cl_intel_subgroups kernels of a required sub-group
// size `width`.
bool offers_sub_group_size(cl_device_id device, size_t width) {
  if (!has_extension(device, "cl_intel_subgroups") || !has_extension(device, "cl_intel_required_subgroup_size")) return false;
  constexpr cl_device_info kSubGroupSizesIntel = 0x4108;  // CL_DEVICE_SUB_GROUP_SIZES_INTEL
  size_t bytes = 0;
  if (clGetDeviceInfo(device, kSubGroupSizesIntel, 0, nullptr, &bytes) != CL_SUCCESS || bytes == 0) return false;
  std::vector<size_t> sizes(bytes / sizeof(size_t));
  if (clGetDeviceInfo(device, kSubGroupSizesIntel, bytes, sizes.data(), nullptr) != CL_SUCCESS) return false;
  return std::find(sizes.begin(), sizes.end(), width) != sizes.end();
}

// Why `device` cannot serve, or empty when it can; fills `out`.
std::string examine(cl_platform_id platform, cl_device_id device, OpenclDevice& out) {
  out.platform = platform;
  out.device = device;
  out.name = device_string(device, CL_DEVICE_NAME);
  out.platform_name = platform_string(platform, CL_PLATFORM_NAME);
  out.driver_version = device_string(device, CL_DRIVER_VERSION);
  out.device_version = device_string(device, CL_DEVICE_VERSION);
  out.fp64 = has_extension(device, "cl_khr_fp64");
  out.gpu = (device_value<cl_device_type>(device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
  out.intel_subgroups = offers_sub_group_size(device, 16);
  const SubGroupPolicy policy = sub_group_policy();
  out.sub_group_kernels = out.intel_subgroups && (policy == SubGroupPolicy::kOn || (policy == SubGroupPolicy::kAuto && out.gpu));
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

SubGroupPolicy sub_group_policy() {
  const char* value = std::getenv("TESSERA_XPU_SUB_GROUPS");
  const std::string_view v = value ? value : "";
  if (v.empty() || v == "auto") return SubGroupPolicy::kAuto;
  if (v == "on") return SubGroupPolicy::kOn;
  if (v == "off") return SubGroupPolicy::kOff;
  throw Error("TESSERA_XPU_SUB_GROUPS must be auto, on or off, not '" + std::string(v.substr(0, 64)) + "'");
}

const DeviceInventory& device_inventory() {
  static const DeviceInventory inventory = discover();
  return inventory;
}

}  // namespace tessera::xpu
