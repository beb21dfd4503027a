#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/gpu_runtime.h"

#include <cstdint>
#include <string>

#include "engine/error.h"

namespace tessera::gpu {
namespace {

__device__ float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return __uint_as_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in f32.
  const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

__device__ uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

// One thread per output element; each reads its block's scale itself.
__global__ void dequantize_kernel(const uint8_t* src, int dtype_tag, float* dst, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  switch (dtype_tag) {
    case 0: dst[i] = half_bits_to_float(load_u16(src + 2 * i)); break;  // F16
    case 1: dst[i] = __uint_as_float(uint32_t(load_u16(src + 2 * i)) << 16); break;  // BF16
    case 2: {  // Q8_0: f16 scale, 32 int8
      const uint8_t* b = src + (i / 32) * 34;
      dst[i] = float(int8_t(b[2 + i % 32])) * half_bits_to_float(load_u16(b));
      break;
    }
    case 3: {  // Q4_0: f16 scale, 16 bytes of nibbles, low nibbles first
      const uint8_t* b = src + (i / 32) * 18;
      const int j = int(i % 32);
      const int q = j < 16 ? (b[2 + j] & 0x0f) : (b[2 + j - 16] >> 4);
      dst[i] = half_bits_to_float(load_u16(b)) * float(q - 8);
      break;
    }
    case 4: {  // Q4_1: f16 scale, f16 min, 16 bytes of nibbles
      const uint8_t* b = src + (i / 32) * 20;
      const int j = int(i % 32);
      const int q = j < 16 ? (b[4 + j] & 0x0f) : (b[4 + j - 16] >> 4);
      dst[i] = __fadd_rn(__fmul_rn(half_bits_to_float(load_u16(b)), float(q)), half_bits_to_float(load_u16(b + 2)));
      break;
    }
    default: break;
  }
}

int dtype_tag(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 0;
    case DType::kBF16: return 1;
    case DType::kQ8_0: return 2;
    case DType::kQ4_0: return 3;
    case DType::kQ4_1: return 4;
    default: return -1;
  }
}

}  // namespace

bool can_dequantize(DType dtype) { return dtype_tag(dtype) >= 0; }

void launch_dequantize(const DequantizeArgs& args, void* stream) {
  const int tag = dtype_tag(args.src_dtype);
  if (tag < 0) throw Error("dequantize: no CUDA kernel for " + std::string(dtype_name(args.src_dtype)));
  const DTypeInfo& info = dtype_info(args.src_dtype);
  if (args.n_elems < 0 || args.n_elems % info.block_elems != 0) {
    throw Error("dequantize: " + std::to_string(args.n_elems) + " elements is not a whole number of blocks");
  }
  if (args.n_elems == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (args.n_elems + kThreads - 1) / kThreads;
  dequantize_kernel<<<unsigned(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t*>(args.src), tag, args.dst, args.n_elems);
  check(cudaGetLastError(), "dequantize launch");
}

}  // namespace tessera::gpu
