#pragma once
// The one place where CUDA runtime names meet HIP: the CUDA sources include
// this header instead of <cuda_runtime.h>, and a ROCm build maps the names.
#if defined(__HIP_PLATFORM_AMD__) || defined(TESSERA_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaGetErrorString hipGetErrorString
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaSetDevice hipSetDevice
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaStream_t hipStream_t
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamQuery hipStreamQuery
#define cudaErrorNotReady hipErrorNotReady
#define cudaGetLastError hipGetLastError
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemsetAsync hipMemsetAsync
#define cudaEvent_t hipEvent_t
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventDestroy hipEventDestroy
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaGraphInstantiate hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy

// The kernels are written for 32-lane warps. A CDNA wavefront has 64 lanes,
// so every shuffle stays within its 32-lane half, as a CUDA warp's would;
// the lane masks of the CUDA calls have no HIP counterpart (all lanes take
// part in every shuffle here).
template <class T>
__device__ inline T __shfl_xor_sync(unsigned, T value, int lane_mask, int width = 32) {
  return __shfl_xor(value, lane_mask, width);
}
template <class T>
__device__ inline T __shfl_sync(unsigned, T value, int source_lane, int width = 32) {
  return __shfl(value, source_lane, width);
}

// A wavefront runs its lanes in lockstep: ordering their shared-memory
// accesses takes fences around a scheduling barrier, not a hardware one.
__device__ inline void __syncwarp() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

// Four signed bytes of a times those of b, plus c: one v_dot4_i32_i8 where
// the architecture has it, four multiplies elsewhere.
__device__ inline int __dp4a(int a, int b, int c) {
#if defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__) || defined(__gfx1030__)
  return __builtin_amdgcn_sdot4(a, b, c, false);
#else
  for (int i = 0; i < 32; i += 8) c += int(int8_t(a >> i)) * int(int8_t(b >> i));
  return c;
#endif
}
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include <string>

#include "engine/core/error.h"
#include "engine/tensor/device.h"

namespace tessera::gpu {

// What this build's devices are called: cuda:N, or hip:N on ROCm.
#if defined(__HIP_PLATFORM_AMD__) || defined(TESSERA_HIP)
inline constexpr DeviceKind kDeviceKind = DeviceKind("hip");
inline constexpr const char* kDeviceName = "hip";
inline constexpr const char* kPlatformName = "ROCm";
#else
inline constexpr DeviceKind kDeviceKind = DeviceKind("cuda");
inline constexpr const char* kDeviceName = "cuda";
inline constexpr const char* kPlatformName = "CUDA";
#endif

// The device's architecture: sm_90, or gfx90a on ROCm.
inline std::string architecture(const cudaDeviceProp& props) {
#if defined(__HIP_PLATFORM_AMD__) || defined(TESSERA_HIP)
  return props.gcnArchName;
#else
  return "sm_" + std::to_string(props.major) + std::to_string(props.minor);
#endif
}

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string("gpu: ") + what + ": " + cudaGetErrorString(status));
}

}  // namespace tessera::gpu
