#pragma once
// Attention scores sixteen keys at a time on AVX-512, each key in one lane:
// every product and sum of lane16_dot (lane_sum.h) happens in the same order,
// for sixteen keys side by side instead of one key's lanes reduced across a
// register. A block's keys are transposed once and then serve every query
// of a work item. Include only from the AVX-512 build of the kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/attention/lane_sum.h"

namespace tessera::cpu {

constexpr int kKeyBlock = kLanes;

// out[c] lane j = rows[j] lane c: a 16 x 16 transpose in registers.
static inline void transpose16(const __m512 (&rows)[16], __m512 (&out)[16]) {
  __m512 pairs[16], quads[16];
  for (int k = 0; k < 8; ++k) {  // per 128-bit lane: rows 2k, 2k + 1 interleaved
    pairs[2 * k] = _mm512_unpacklo_ps(rows[2 * k], rows[2 * k + 1]);
    pairs[2 * k + 1] = _mm512_unpackhi_ps(rows[2 * k], rows[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // per 128-bit lane c: column 4c + j of rows 4k .. 4k + 3
    quads[4 * k] = _mm512_shuffle_ps(pairs[4 * k], pairs[4 * k + 2], 0x44);
    quads[4 * k + 1] = _mm512_shuffle_ps(pairs[4 * k], pairs[4 * k + 2], 0xEE);
    quads[4 * k + 2] = _mm512_shuffle_ps(pairs[4 * k + 1], pairs[4 * k + 3], 0x44);
    quads[4 * k + 3] = _mm512_shuffle_ps(pairs[4 * k + 1], pairs[4 * k + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {  // gather each column's four 128-bit pieces
    const __m512 even_a = _mm512_shuffle_f32x4(quads[j], quads[4 + j], 0x88);
    const __m512 odd_a = _mm512_shuffle_f32x4(quads[j], quads[4 + j], 0xDD);
    const __m512 even_b = _mm512_shuffle_f32x4(quads[8 + j], quads[12 + j], 0x88);
    const __m512 odd_b = _mm512_shuffle_f32x4(quads[8 + j], quads[12 + j], 0xDD);
    out[j] = _mm512_shuffle_f32x4(even_a, even_b, 0x88);
    out[8 + j] = _mm512_shuffle_f32x4(even_a, even_b, 0xDD);
    out[4 + j] = _mm512_shuffle_f32x4(odd_a, odd_b, 0x88);
    out[12 + j] = _mm512_shuffle_f32x4(odd_a, odd_b, 0xDD);
  }
}

// keys_t[d][j] = rows[j][d] for j < n (n <= 16), zero for the lanes past n;
// dim % 16 == 0. rows: [n][dim] f32; keys_t: [dim][16], 64-byte aligned.
static inline void transpose_key_block(const float* rows, int n, int dim, float* keys_t) {
  for (int d0 = 0; d0 < dim; d0 += kLanes) {
    __m512 in[16], out[16];
    for (int j = 0; j < 16; ++j) in[j] = j < n ? _mm512_loadu_ps(rows + size_t(j) * size_t(dim) + size_t(d0)) : _mm512_setzero_ps();
    transpose16(in, out);
    for (int i = 0; i < 16; ++i) _mm512_store_ps(keys_t + size_t(d0 + i) * kKeyBlock, out[i]);
  }
}

// dots[r][b] lane j = lane16_dot(q[r], key j of block b) for kQueries (<= 2)
// queries and kBlocks (<= 2) transposed blocks; dim % 16 == 0. Lane l of
// lane16_dot's accumulator is a chain of fused multiply-adds over d = l,
// l + 16, …; here chain l runs for all sixteen keys of a block in one
// register, and the 16-lane reduction tree joins the chains as registers.
// Each pass runs sixteen chains (those of whole quarters of the tree: lanes
// i + 4m, m < 4): enough in flight to hide the multiply-add latency, while
// every key vector loaded serves each query and every query element
// broadcast serves each block.
template <int kQueries, int kBlocks>
static inline void key_block_dots(const float* const* q, const float* const* blocks, int dim, __m512 (&dots)[2][2]) {
  constexpr int kPassQuarters = 4 / (kQueries * kBlocks);
  __m512 quarters[kQueries][kBlocks][4];
  for (int i0 = 0; i0 < 4; i0 += kPassQuarters) {
    __m512 chain[kQueries][kBlocks][kPassQuarters][4];  // lane i0 + j + 4m at [.][.][j][m]
    for (auto& query : chain) for (auto& block : query) for (auto& quarter : block) for (auto& c : quarter) c = _mm512_setzero_ps();
    for (int d = 0; d < dim; d += kLanes) {
      for (int j = 0; j < kPassQuarters; ++j) {
        for (int m = 0; m < 4; ++m) {
          const int lane = i0 + j + 4 * m;
          __m512 k[kBlocks];
          for (int b = 0; b < kBlocks; ++b) {
            k[b] = _mm512_load_ps(blocks[b] + size_t(d + lane) * kKeyBlock);
            asm("" : "+v"(k[b]));  // one load for every query, not one each
          }
          for (int r = 0; r < kQueries; ++r) {
            const __m512 x = _mm512_set1_ps(q[r][d + lane]);
            for (int b = 0; b < kBlocks; ++b) chain[r][b][j][m] = _mm512_fmadd_ps(x, k[b], chain[r][b][j][m]);
          }
        }
      }
    }
    // reduce_16_lanes: half i = chain i + 8 plus chain i; quarter i = half
    // i + 4 plus half i.
    for (int r = 0; r < kQueries; ++r) {
      for (int b = 0; b < kBlocks; ++b) {
        for (int j = 0; j < kPassQuarters; ++j) {
          const __m512* c = chain[r][b][j];
          quarters[r][b][i0 + j] = _mm512_add_ps(_mm512_add_ps(c[3], c[1]), _mm512_add_ps(c[2], c[0]));
        }
      }
    }
  }
  for (int r = 0; r < kQueries; ++r) {
    for (int b = 0; b < kBlocks; ++b) {
      const __m512* x = quarters[r][b];
      dots[r][b] = _mm512_add_ps(_mm512_add_ps(x[0], x[2]), _mm512_add_ps(x[1], x[3]));
    }
  }
}

// The lanes of a block whose keys (first + j) lie in [lo, hi].
static inline __mmask16 visible_lanes(int first, int lo, int hi) {
  const int from = std::max(0, lo - first), to = std::min(kKeyBlock - 1, hi - first);
  if (from > to) return 0;
  return __mmask16(((1u << (to - from + 1)) - 1) << from);
}

}  // namespace tessera::cpu
