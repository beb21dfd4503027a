#pragma once
// The OpenCL devices on this machine, as the ICD loader lists them, and for
// each whether the XPU backend can use it and how its memory is reached:
// Intel's unified shared memory where the driver has it, shared virtual
// memory otherwise. Kernels take plain device pointers either way.
#include <string>
#include <vector>

#include "kernels/xpu/opencl.h"

namespace tessera::xpu {

enum class MemoryModel {
  kUsm,  // cl_intel_unified_shared_memory: device allocations
  kSvm,  // OpenCL 2.0 coarse-grained shared virtual memory
};

struct OpenclDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string name, platform_name, driver_version, device_version;
  MemoryModel memory = MemoryModel::kSvm;
  bool fp64 = false;
};

struct DeviceInventory {
  std::vector<OpenclDevice> usable;  // xpu:0, xpu:1, … in this order
  // One line per device not used and why, or why no platform answered.
  std::vector<std::string> unusable;
};

// Asks the ICD loader once per process; the answer does not change.
const DeviceInventory& device_inventory();

}  // namespace tessera::xpu
