#pragma once
// Decoding of weight rows 32 elements at a time, the unit every kernel here
// works in: one legacy GGUF block (Q4_0, Q4_1, Q5_0, Q8_0), one of the eight
// sub-blocks of a k-quant super-block (Q4_K, Q6_K), or 32 plain elements
// (F32, F16, BF16). Each product and sum is rounded on its own, as the CPU's
// dequantize_row rounds it, so a decoded chunk has the CPU's bits.
#include <cstdint>

#include "engine/tensor/dtype.h"
#include "kernels/cuda/gpu_runtime.h"
#include "quant/gguf_blocks.h"

namespace tessera::gpu {

constexpr int kChunk = 32;

__device__ inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return __uint_as_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in f32.
  const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// Blocks are only 2-byte aligned: halves are read as such.
__device__ inline float load_half(const uint8_t* p) { return half_bits_to_float(*reinterpret_cast<const uint16_t*>(p)); }

__device__ inline uint32_t load_u32_bytes(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// The formats a chunk decoder exists for.
__host__ __device__ constexpr bool chunk_decodable(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ4_0 || t == DType::kQ4_1 ||
         t == DType::kQ5_0 || t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K;
}

// Elements 32c .. 32c + 31 of the row at `row` into v[0..31].
template <DType T>
__device__ inline void decode_chunk(const uint8_t* row, int64_t c, float* v) {
  if constexpr (T == DType::kF32) {
    const float4* p = reinterpret_cast<const float4*>(row + c * kChunk * 4);
#pragma unroll
    for (int i = 0; i < kChunk / 4; ++i) {
      const float4 f = p[i];
      v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
    }
  } else if constexpr (T == DType::kF16 || T == DType::kBF16) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row + c * kChunk * 2);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      v[i] = T == DType::kF16 ? half_bits_to_float(p[i]) : __uint_as_float(uint32_t(p[i]) << 16);
    }
  } else if constexpr (T == DType::kQ4_0) {
    const uint8_t* b = row + c * sizeof(BlockQ4_0);
    const float d = load_half(b);
#pragma unroll
    for (int j = 0; j < kChunk / 2; ++j) {
      const uint8_t q = b[2 + j];
      v[j] = __fmul_rn(d, float(int(q & 0x0f) - 8));
      v[j + kChunk / 2] = __fmul_rn(d, float(int(q >> 4) - 8));
    }
  } else if constexpr (T == DType::kQ4_1) {
    const uint8_t* b = row + c * sizeof(BlockQ4_1);
    const float d = load_half(b), m = load_half(b + 2);
#pragma unroll
    for (int j = 0; j < kChunk / 2; ++j) {
      const uint8_t q = b[4 + j];
      v[j] = __fadd_rn(__fmul_rn(d, float(q & 0x0f)), m);
      v[j + kChunk / 2] = __fadd_rn(__fmul_rn(d, float(q >> 4)), m);
    }
  } else if constexpr (T == DType::kQ5_0) {
    const uint8_t* b = row + c * sizeof(BlockQ5_0);
    const float d = load_half(b);
    const uint32_t qh = load_u32_bytes(b + 2);
#pragma unroll
    for (int j = 0; j < kChunk / 2; ++j) {
      const uint8_t q = b[6 + j];
      const int lo = int(q & 0x0f) | int((qh >> j) & 1u) << 4;
      const int hi = int(q >> 4) | int((qh >> (j + 16)) & 1u) << 4;
      v[j] = __fmul_rn(d, float(lo - 16));
      v[j + kChunk / 2] = __fmul_rn(d, float(hi - 16));
    }
  } else if constexpr (T == DType::kQ8_0) {
    const uint8_t* b = row + c * sizeof(BlockQ8_0);
    const float d = load_half(b);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = __fmul_rn(float(int8_t(b[2 + j])), d);
  } else if constexpr (T == DType::kQ4_K) {
    // Sub-block j of the super-block: its own 6-bit scale and minimum; its
    // nibbles are the low (even j) or high (odd j) halves of 32 bytes.
    const uint8_t* b = row + (c / 8) * sizeof(BlockQ4_K);
    const int j = int(c % 8);
    const float d = load_half(b), dmin = load_half(b + 2);
    const uint8_t* s = b + 4;
    int sc, m;
    if (j < 4) {
      sc = s[j] & 0x3f;
      m = s[j + 4] & 0x3f;
    } else {
      sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 2) & 0x30);
      m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
    }
    const float scale = __fmul_rn(d, float(sc)), offset = __fmul_rn(dmin, float(m));
    const uint8_t* qs = b + 16 + (j / 2) * 32;
    const int shift = (j % 2) * 4;
#pragma unroll
    for (int l = 0; l < kChunk; ++l) v[l] = __fsub_rn(__fmul_rn(scale, float((qs[l] >> shift) & 0x0f)), offset);
  } else if constexpr (T == DType::kQ6_K) {
    // Chunk j: half j / 4 of the super-block; low nibbles from ql, two high
    // bits from qh, one scale per 16 elements.
    const uint8_t* b = row + (c / 8) * sizeof(BlockQ6_K);
    const int j = int(c % 8), half = j / 4, quarter = j % 4;
    const float d = load_half(b + 208);
    const uint8_t* ql = b + half * 64 + (quarter % 2) * 32;
    const uint8_t* qh = b + 128 + half * 32;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192) + j * 2;
    const float s0 = __fmul_rn(d, float(scales[0])), s1 = __fmul_rn(d, float(scales[1]));
    const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
#pragma unroll
    for (int l = 0; l < kChunk; ++l) {
      const int q = (((ql[l] >> low_shift) & 0x0f) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
      v[l] = __fmul_rn(l < 16 ? s0 : s1, float(q));
    }
  }
}

}  // namespace tessera::gpu

// Runs the statements after FALLBACK with a constexpr DType `T` equal to the
// run-time `dtype`, for every chunk-decodable format; anything else runs FALLBACK.
#define TESSERA_DISPATCH_CHUNK_DTYPE(dtype, FALLBACK, ...)         \
  switch (dtype) {                                                 \
    case DType::kF32: { constexpr DType T = DType::kF32; __VA_ARGS__; break; }   \
    case DType::kF16: { constexpr DType T = DType::kF16; __VA_ARGS__; break; }   \
    case DType::kBF16: { constexpr DType T = DType::kBF16; __VA_ARGS__; break; } \
    case DType::kQ4_0: { constexpr DType T = DType::kQ4_0; __VA_ARGS__; break; } \
    case DType::kQ4_1: { constexpr DType T = DType::kQ4_1; __VA_ARGS__; break; } \
    case DType::kQ5_0: { constexpr DType T = DType::kQ5_0; __VA_ARGS__; break; } \
    case DType::kQ8_0: { constexpr DType T = DType::kQ8_0; __VA_ARGS__; break; } \
    case DType::kQ4_K: { constexpr DType T = DType::kQ4_K; __VA_ARGS__; break; } \
    case DType::kQ6_K: { constexpr DType T = DType::kQ6_K; __VA_ARGS__; break; } \
    default: FALLBACK;                                             \
  }
