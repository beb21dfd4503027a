#pragma once
// GGUF block weights against 8-bit activations (kernels/cuda/activation_q8.cuh)
// with the CPU backend's arithmetic (kernels/cpu/linear/vec_dot_x86_impl.h): eight
// lanes per row, lane l holding the integer sums of elements 4l .. 4l + 3
// of every 32-element chunk, each block's sums scaled into the lane's float
// accumulator by one fused multiply-add, block after block; then the lanes
// are reduced in the CPU's order. The results are the CPU's bits.
#include <cstdint>

#include "kernels/cuda/gguf_chunks.cuh"

namespace tessera::gpu {

constexpr int kLanesPerRow = 8;

// Four signed bytes into one word for __dp4a.
__device__ inline int pack4(int a, int b, int c, int d) {
  return (a & 0xff) | (b & 0xff) << 8 | (c & 0xff) << 16 | (d & 0xff) << 24;
}

__device__ inline int load_word(const int8_t* p) { return *reinterpret_cast<const int*>(p); }

// Four bytes at a 2-byte aligned address (GGUF blocks are only that
// aligned), read as two halves rather than four bytes.
__device__ inline uint32_t load_u32_aligned2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return uint32_t(h[0]) | uint32_t(h[1]) << 16;
}

// Bits 0..3 of h moved to bit 4 of bytes 0..3.
__device__ inline uint32_t spread_to_bit4(uint32_t h) {
  return (h & 1u) << 4 | (h & 2u) << 11 | (h & 4u) << 18 | (h & 8u) << 25;
}

// Byte-wise x - k for bytes of x in 0..127 and of k in 0..128, as signed
// bytes: each byte of x | 0x80 stays above its k, so no borrow crosses a
// byte, and the xor takes the 0x80 back off (HIP has no __vsub4).
__device__ inline uint32_t subtract_bytes(uint32_t x, uint32_t k) { return ((x | 0x80808080u) - k) ^ 0x80808080u; }

// The elements 4l .. 4l + 3 of a 32-element block of a legacy format,
// packed as four signed bytes; byte-wise operations on whole words give
// the same bytes as decoding each element.
template <DType T>
__device__ inline int legacy_lane_values(const uint8_t* b, int lane) {
  if constexpr (T == DType::kQ8_0) {
    return int(load_u32_aligned2(b + 2 + 4 * lane));
  } else {
    // Low nibbles are elements 0..15, high nibbles 16..31.
    const uint32_t qs = load_u32_aligned2(b + (T == DType::kQ4_1 ? 4 : T == DType::kQ5_0 ? 6 : 2) + 4 * (lane % 4));
    const uint32_t nibbles = (qs >> (lane < 4 ? 0 : 4)) & 0x0f0f0f0fu;
    if constexpr (T == DType::kQ4_0) return int(subtract_bytes(nibbles, 0x08080808u));
    if constexpr (T == DType::kQ5_0) {
      const uint32_t qh = load_u32_aligned2(b + 2);
      return int(subtract_bytes(nibbles | spread_to_bit4((qh >> (4 * lane)) & 0x0fu), 0x10101010u));
    }
    return int(nibbles);
  }
}

constexpr size_t legacy_block_bytes(DType t) {
  return t == DType::kQ4_0 ? sizeof(BlockQ4_0) : t == DType::kQ4_1 ? sizeof(BlockQ4_1) : t == DType::kQ5_0 ? sizeof(BlockQ5_0)
                                                                                                         : sizeof(BlockQ8_0);
}

// One row's lane accumulators for one token.
struct LaneSums {
  float acc = 0.0f;   // the lane's share of the scaled block sums
  float mins = 0.0f;  // Q4_1: the minimum terms (every lane the same); Q4_K: lanes 0..3 hold the four minimum sums
};

// The integer sum of lane `lane` in block (or super-block) b of the weight
// row times one token's activation row `qs`.
template <DType T>
__device__ inline int lane_sumi(const uint8_t* row, int64_t b, int lane, const int8_t* qs) {
  if constexpr (T == DType::kQ4_0 || T == DType::kQ4_1 || T == DType::kQ5_0 || T == DType::kQ8_0) {
    return __dp4a(legacy_lane_values<T>(row + b * legacy_block_bytes(T), lane), load_word(qs + b * kChunk + 4 * lane), 0);
  } else if constexpr (T == DType::kQ4_K) {
    // Super-blocks are 144 bytes and rows start 256-byte aligned: words.
    const uint8_t* block = row + b * sizeof(BlockQ4_K);
    const uint32_t* sc = reinterpret_cast<const uint32_t*>(block + 4);
    const uint32_t sc0 = sc[0], sc1 = sc[1], sc2 = sc[2];
    auto sc_byte = [&](int k) { return int(((k < 4 ? sc0 : k < 8 ? sc1 : sc2) >> (8 * (k % 4))) & 0xffu); };
    const int8_t* a = qs + b * 256;
    int sumi = 0;
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) {
      // Sub-blocks 2 pair (low nibbles) and 2 pair + 1 (high nibbles) share these bytes.
      const uint32_t q = *reinterpret_cast<const uint32_t*>(block + 16 + pair * 32 + 4 * lane);
#pragma unroll
      for (int high = 0; high < 2; ++high) {
        const int c = 2 * pair + high;
        const int scale = c < 4 ? sc_byte(c) & 0x3f : (sc_byte(c + 4) & 0x0f) | ((sc_byte(c - 4) >> 2) & 0x30);
        const int w = int((q >> (4 * high)) & 0x0f0f0f0fu);
        sumi += scale * __dp4a(w, load_word(a + c * kChunk + 4 * lane), 0);
      }
    }
    return sumi;
  } else {
    static_assert(T == DType::kQ6_K);
    const uint8_t* block = row + b * sizeof(BlockQ6_K);
    const int8_t* scales = reinterpret_cast<const int8_t*>(block + 192);
    const int8_t* a = qs + b * 256;
    int sumi = 0;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // Each half's low-bit words serve two quarters and its high-bit word four.
      const uint32_t qh = load_u32_aligned2(block + 128 + half * 32 + 4 * lane);
      const uint32_t ql[2] = {load_u32_aligned2(block + half * 64 + 4 * lane),
                              load_u32_aligned2(block + half * 64 + 32 + 4 * lane)};
#pragma unroll
      for (int quarter = 0; quarter < 4; ++quarter) {
        const int c = 4 * half + quarter;
        const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
        const uint32_t v = ((ql[quarter % 2] >> low_shift) & 0x0f0f0f0fu) | (((qh >> high_shift) & 0x03030303u) << 4);
        sumi += scales[2 * c + (lane >= 4)] * __dp4a(int(v), load_word(a + c * kChunk + 4 * lane), 0);
      }
    }
    // The CPU stores q + 32 and subtracts 32 * scale * (sum of the 16
    // activations) for groups 2l and 2l + 1 in lane l.
    const int* chunk = reinterpret_cast<const int*>(a + lane * kChunk);
    int first = 0, second = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      first = __dp4a(chunk[i], 0x01010101, first);
      second = __dp4a(chunk[i + 4], 0x01010101, second);
    }
    return sumi - 32 * (first * scales[2 * lane] + second * scales[2 * lane + 1]);
  }
}

// The float factors block b's lane sums are scaled by, the same for all
// eight lanes: formed once per block, apart from the lanes' chains.
struct BlockFactors {
  float scale = 0.0f;      // weight scale × activation scale
  float min_term = 0.0f;   // Q4_1: the block's minimum term m × s; Q4_K: -(activation scale) × dmin
  int mins[4] = {};        // Q4_K: the CPU's four minimum sums (sub-blocks 2i and 2i + 1)
};

// d, s: the token's chunk fields (Q8Rows).
template <DType T>
__device__ inline BlockFactors block_factors(const uint8_t* row, int64_t b, const float* d, const float* s) {
  BlockFactors f;
  if constexpr (T == DType::kQ4_0 || T == DType::kQ4_1 || T == DType::kQ5_0 || T == DType::kQ8_0) {
    const uint8_t* block = row + b * legacy_block_bytes(T);
    f.scale = __fmul_rn(load_half(block), d[b]);
    if constexpr (T == DType::kQ4_1) f.min_term = __fmul_rn(load_half(block + 2), s[b]);
  } else if constexpr (T == DType::kQ4_K) {
    const uint8_t* block = row + b * sizeof(BlockQ4_K);
    const uint8_t* sc = block + 4;
    const float yd = d[b * 8];
    auto min_of = [&](int j) { return j < 4 ? sc[j + 4] & 0x3f : (sc[j + 4] >> 4) | ((sc[j] >> 2) & 0x30); };
#pragma unroll
    for (int i = 0; i < 4; ++i) f.mins[i] = min_of(2 * i) * int(s[b * 8 + 2 * i]) + min_of(2 * i + 1) * int(s[b * 8 + 2 * i + 1]);
    f.min_term = __fmul_rn(-yd, load_half(block + 2));
    f.scale = __fmul_rn(yd, load_half(block));
  } else {
    f.scale = __fmul_rn(d[b * 8], load_half(row + b * sizeof(BlockQ6_K) + 208));
  }
  return f;
}

// Scales lane `lane`'s integer sum of a block into its accumulators; the
// chain of calls runs block after block, as the CPU's does.
template <DType T>
__device__ inline void lane_step(const BlockFactors& f, int lane, int sumi, LaneSums& sums) {
  if constexpr (T == DType::kQ4_K) {
    if (lane < 4) sums.mins = fmaf(f.min_term, float(f.mins[lane]), sums.mins);
  }
  sums.acc = fmaf(f.scale, float(sumi), sums.acc);
  if constexpr (T == DType::kQ4_1) sums.mins = __fadd_rn(sums.mins, f.min_term);
}

// Adds block (or super-block) b of the weight row times the activations of
// one token into lane `lane`'s sums. qs: the token's activation row; d, s:
// its chunk fields (Q8Rows).
template <DType T>
__device__ inline void lane_block(const uint8_t* row, int64_t b, int lane, const int8_t* qs, const float* d, const float* s,
                                  LaneSums& sums) {
  lane_step<T>(block_factors<T>(row, b, d, s), lane, lane_sumi<T>(row, b, lane, qs), sums);
}

// The row's dot product from its eight lanes (every lane of the group gets
// it): the lane sums reduced as the CPU's hsum reduces a register, then the
// minimum terms added.
template <DType T>
__device__ inline float reduce_lanes(const LaneSums& sums) {
  float acc = sums.acc;
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
  if constexpr (T == DType::kQ4_1) return __fadd_rn(acc, sums.mins);
  if constexpr (T == DType::kQ4_K) {
    float mins = sums.mins;
    mins = __fadd_rn(mins, __shfl_xor_sync(0xffffffffu, mins, 2));
    mins = __fadd_rn(mins, __shfl_xor_sync(0xffffffffu, mins, 1));
    // Lane 0 of the group holds (m0 + m2) + (m1 + m3).
    mins = __shfl_sync(0xffffffffu, mins, (threadIdx.x % 32) & ~(kLanesPerRow - 1));
    return __fadd_rn(acc, mins);
  }
  return acc;
}

// Blocks of a row: 32-element blocks, or 256-element super-blocks.
template <DType T>
constexpr int64_t elements_per_block() {
  return T == DType::kQ4_K || T == DType::kQ6_K ? 256 : kChunk;
}

}  // namespace tessera::gpu
