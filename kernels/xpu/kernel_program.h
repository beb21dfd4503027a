#pragma once
// The backend's OpenCL program built for one device, and its kernels by
// name. A built program is kept in the artifact cache
// (engine/io/artifact_cache.h), keyed by the device, its driver, the build
// options and the source, so a later start loads it instead of compiling
// again; a damaged copy is deleted and built anew.
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "engine/io/artifact_cache.h"
#include "kernels/xpu/device_inventory.h"

namespace tessera::xpu {

// Where built programs are kept: $TESSERA_KERNEL_CACHE (which `tessera
// serve` sets to server.cache_dir when the config names one), else
// $XDG_CACHE_HOME/tessera/opencl, else ~/.cache/tessera/opencl; empty when
// none of these can be named.
std::string kernel_cache_dir();

class KernelProgram {
 public:
  // Throws tessera::Error with the compiler's log when the build fails.
  KernelProgram(const OpenclDevice& device, cl_context context);

  cl_kernel kernel(std::string_view name) const;
  bool has_kernel(std::string_view name) const { return kernels_.find(name) != kernels_.end(); }
  bool loaded_from_cache() const { return loaded_from_cache_; }

 private:
  bool load_cached(const OpenclDevice& device, cl_context context, const ArtifactCache& cache, const std::string& key,
                   const std::string& options);
  void build_from_source(const OpenclDevice& device, cl_context context, const std::string& source,
                         const std::string& options);
  void store(const ArtifactCache& cache, const std::string& key) const;

  ProgramHandle program_;
  std::map<std::string, KernelHandle, std::less<>> kernels_;  // looked up by name without a copy
  bool loaded_from_cache_ = false;
};

}  // namespace tessera::xpu
