#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/gpu_runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/error.h"
#include "quant/gguf_blocks.h"

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

// One thread per output element; each reads its block's scale itself. The
// block layouts are the shared ones of quant/gguf_blocks.h.
__global__ void dequantize_kernel(const uint8_t* src, DType dtype, float* dst, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int j = int(i % kQK);
  switch (dtype) {
    case DType::kF16: dst[i] = half_bits_to_float(load_u16(src + 2 * i)); break;
    case DType::kBF16: dst[i] = __uint_as_float(uint32_t(load_u16(src + 2 * i)) << 16); break;
    case DType::kQ8_0: {
      const uint8_t* b = src + (i / kQK) * sizeof(BlockQ8_0);
      dst[i] = float(int8_t(b[offsetof(BlockQ8_0, qs) + j])) * half_bits_to_float(load_u16(b + offsetof(BlockQ8_0, d)));
      break;
    }
    case DType::kQ4_0: {  // low nibbles are the first half of the block
      const uint8_t* b = src + (i / kQK) * sizeof(BlockQ4_0);
      const uint8_t* qs = b + offsetof(BlockQ4_0, qs);
      const int q = j < kQK / 2 ? (qs[j] & 0x0f) : (qs[j - kQK / 2] >> 4);
      dst[i] = half_bits_to_float(load_u16(b + offsetof(BlockQ4_0, d))) * float(q - 8);
      break;
    }
    case DType::kQ4_1: {
      const uint8_t* b = src + (i / kQK) * sizeof(BlockQ4_1);
      const uint8_t* qs = b + offsetof(BlockQ4_1, qs);
      const int q = j < kQK / 2 ? (qs[j] & 0x0f) : (qs[j - kQK / 2] >> 4);
      dst[i] = __fadd_rn(__fmul_rn(half_bits_to_float(load_u16(b + offsetof(BlockQ4_1, d))), float(q)),
                         half_bits_to_float(load_u16(b + offsetof(BlockQ4_1, m))));
      break;
    }
    default: break;
  }
}

}  // namespace

bool can_dequantize(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1: return true;
    default: return false;
  }
}

void launch_dequantize(const DequantizeArgs& args, void* stream) {
  if (!can_dequantize(args.src_dtype)) throw Error("dequantize: no CUDA kernel for " + std::string(dtype_name(args.src_dtype)));
  const DTypeInfo& info = dtype_info(args.src_dtype);
  if (args.n_elems < 0 || args.n_elems % info.block_elems != 0) {
    throw Error("dequantize: " + std::to_string(args.n_elems) + " elements is not a whole number of blocks");
  }
  if (args.n_elems == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (args.n_elems + kThreads - 1) / kThreads;
  dequantize_kernel<<<unsigned(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t*>(args.src), args.src_dtype, args.dst, args.n_elems);
  check(cudaGetLastError(), "dequantize launch");
}

}  // namespace tessera::gpu
