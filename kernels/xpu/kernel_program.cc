#include "kernels/xpu/kernel_program.h"

#include <cstdlib>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/artifact_cache.h"
#include "engine/io/content_hash.h"
#include "kernels/xpu/program_source.h"

namespace tessera::xpu {
namespace {

// The artifact cache's kind for built programs.
constexpr const char* kProgramArtifact = "opencl-program";

std::string build_options(const OpenclDevice& device) {
  // OpenCL C 1.2 is what every driver compiles. Division and square root
  // correctly rounded where the device offers it, as on the CPU.
  std::string options = "-cl-std=CL1.2";
  const auto fp = device_value<cl_device_fp_config>(device.device, CL_DEVICE_SINGLE_FP_CONFIG);
  if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) options += " -cl-fp32-correctly-rounded-divide-sqrt";
  if (device.sub_group_kernels) options += " -DXPU_INTEL_SUBGROUPS=1";
  return options;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log.size() > 4000 ? log.substr(0, 4000) + "…" : log;
}

}  // namespace

std::string kernel_cache_dir() {
  if (const char* dir = std::getenv("TESSERA_KERNEL_CACHE"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tessera/opencl";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tessera/opencl";
  return {};
}

KernelProgram::KernelProgram(const OpenclDevice& device, cl_context context) {
  const std::string source = program_source(), options = build_options(device);
  const std::string dir = kernel_cache_dir();
  const std::string key = ContentHash()
                              .add(kProgramArtifact)
                              .add(device.platform_name)
                              .add(device.name)
                              .add(device.driver_version)
                              .add(options)
                              .add(source)
                              .hex();
  const ArtifactCache cache(dir);
  loaded_from_cache_ = !dir.empty() && load_cached(device, context, cache, key, options);
  if (!loaded_from_cache_) {
    build_from_source(device, context, source, options);
    if (!dir.empty()) store(cache, key);
  }
  cl_uint count = 0;
  check(clCreateKernelsInProgram(program_.get(), 0, nullptr, &count), "list kernels");
  std::vector<cl_kernel> kernels(count);
  check(clCreateKernelsInProgram(program_.get(), count, kernels.data(), nullptr), "create kernels");
  for (cl_kernel k : kernels) {
    size_t size = 0;
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size);
    std::string name(size, '\0');
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, size, name.data(), nullptr);
    while (!name.empty() && name.back() == '\0') name.pop_back();
    kernels_.emplace(name, KernelHandle(k));
  }
}

bool KernelProgram::load_cached(const OpenclDevice& device, cl_context context, const ArtifactCache& cache, const std::string& key,
                                const std::string& options) {
  const std::optional<std::string> binary = cache.load(kProgramArtifact, key);  // checked against its SHA-256
  if (!binary || binary->empty()) return false;
  const auto* data = reinterpret_cast<const unsigned char*>(binary->data());
  const size_t size = binary->size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(context, 1, &device.device, &size, &data, &binary_status, &status);
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program) clReleaseProgram(program);
    return false;
  }
  ProgramHandle owned(program);
  // A binary the driver no longer accepts is rebuilt from source.
  if (clBuildProgram(program, 1, &device.device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) return false;
  program_ = std::move(owned);
  return true;
}

void KernelProgram::build_from_source(const OpenclDevice& device, cl_context context, const std::string& source,
                                      const std::string& options) {
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  program_.reset(clCreateProgramWithSource(context, 1, &text, &length, &status));
  check(status, "create program");
  if (clBuildProgram(program_.get(), 1, &device.device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    throw Error("xpu: building the kernels for " + device.name + " failed:\n" + build_log(program_.get(), device.device));
  }
}

// A cache that cannot be written only costs the next start.
void KernelProgram::store(const ArtifactCache& cache, const std::string& key) const {
  size_t size = 0;
  if (clGetProgramInfo(program_.get(), CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS || size == 0) return;
  std::string binary(size, '\0');
  auto* data = reinterpret_cast<unsigned char*>(binary.data());
  if (clGetProgramInfo(program_.get(), CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) != CL_SUCCESS) return;
  cache.store(kProgramArtifact, key, binary);
}

cl_kernel KernelProgram::kernel(std::string_view name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) throw Error("xpu: the program has no kernel '" + std::string(name) + "'");
  return it->second.get();
}

}  // namespace tessera::xpu
