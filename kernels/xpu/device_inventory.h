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
  bool gpu = false;  // CL_DEVICE_TYPE_GPU
  // cl_intel_subgroups with a required sub-group size of 16: every Intel
  // GPU, and Intel's OpenCL runtime for CPUs.
  bool intel_subgroups = false;
  // Decode linears run a row's eight lanes as work-items of a sub-group
  // (cl/linear_lanes.cl) and attention reduces its 16-key groups by
  // shuffles (cl/attention.cl): on GPUs that offer the sub-groups, or
  // wherever they are offered when TESSERA_XPU_SUB_GROUPS=on. On a CPU
  // device the compiler's own vectorisation across rows is faster (the
  // figures in docs/backends.md), so there `auto` keeps the portable kernels.
  bool sub_group_kernels = false;
};

enum class SubGroupPolicy { kAuto, kOn, kOff };

// TESSERA_XPU_SUB_GROUPS: auto (unset or empty), on or off; anything else
// is an error naming the variable.
SubGroupPolicy sub_group_policy();

struct DeviceInventory {
  std::vector<OpenclDevice> usable;  // xpu:0, xpu:1, … in this order
  // One line per device not used and why, or why no platform answered.
  std::vector<std::string> unusable;
};

// Asks the ICD loader once per process; the answer does not change.
const DeviceInventory& device_inventory();

}  // namespace tessera::xpu
