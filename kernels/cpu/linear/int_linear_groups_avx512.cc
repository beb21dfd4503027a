// Row-group kernels on AVX-512 VNNI (the layout and arithmetic are in
// int_linear_groups.h): each 64-byte weight line holds four columns of 16
// rows, so one vpdpbusd against four activation bytes broadcast to every
// lane adds those columns to all 16 rows at once, and the lanes end as the
// rows' exact span sums with no horizontal reduction. Up to four tokens
// share each weight load, and 4-bit weights go two groups at a time, so
// each broadcast serves two lines.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/linear/int_linear_groups.h"
#include "kernels/cpu/linear/int_linear_groups_epilogue.h"
#include "kernels/cpu/linear/vnni_accumulate.h"
#include "kernels/cpu/linear/weight_prefetch.h"

namespace tessera::cpu {
namespace {

constexpr int kTokenTile = 4;

__m512i broadcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

// Four activation bytes as a memory operand of an asm statement.
struct FourBytes {
  uint8_t b[4];
};
inline const FourBytes& four_bytes(const uint8_t* p) { return *reinterpret_cast<const FourBytes*>(p); }

// Span s of group g for one token: its two byte products' sums joined to acc.
template <int Bits>
__attribute__((always_inline)) inline __m512 close_span(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t token,
                                                        int64_t s, __m512i hi, __m512i lo, __m512 acc) {
  const size_t at = size_t((g * l.n_spans + s) * kRowGroup);
  const int32_t x_sum = Bits == 4 ? t.x_span_sums[token * l.n_spans + s] : 0;
  return a16_span_close(hi, lo, t, at, x_sum, acc);
}

// Group g's f32 sums for tokens t0 .. t0 + T - 1, scaled by each token's
// scale, into y (its real rows only).
template <int T>
__attribute__((always_inline)) inline void store_a16_tile(const IntGroupTask& t, int64_t g, int64_t t0, const __m512 (&acc)[T]) {
  const __mmask16 valid = row_mask(t.rows - g * kRowGroup);
#pragma GCC unroll 4
  for (int k = 0; k < T; ++k) {
    float* y = t.y + (t0 + k) * t.y_stride + g * kRowGroup;
    _mm512_mask_storeu_ps(y, valid, _mm512_mul_ps(acc[k], _mm512_set1_ps(t.x_scales[t0 + k])));
  }
}

// One group's A16 products for T tokens starting at t0.
template <int Bits, int T>
void a16_group(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 acc[T];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const uint8_t* group = t.w + size_t(g) * size_t(l.chunks) * l.block_bytes;
  // Spans of 32 columns (4 bits only) are the two nibble halves of a chunk:
  // a pass over chunk c closes span 2c from the low nibbles' sums ([0]) and
  // span 2c + 1 from the high ones' ([1]). Longer spans take whole chunks.
  const bool half_chunks = Bits == 4 && l.span < kGroupChunk;
  const int64_t span_chunks = half_chunks ? 1 : l.span / kGroupChunk;
  const int64_t passes = half_chunks ? l.chunks : l.n_spans;
  for (int64_t p = 0; p < passes; ++p) {
    const int64_t c0 = p * span_chunks, c1 = std::min(l.chunks, c0 + span_chunks);
    // Two accumulators a sum (8 bits: even and odd lines; 4 bits: low and
    // high nibbles): the integer sums are exact in any order, and two
    // chains hide vpdpbusd's latency.
    __m512i hi[T][2], lo[T][2];
    for (int k = 0; k < T; ++k) hi[k][0] = hi[k][1] = lo[k][0] = lo[k][1] = _mm512_setzero_si512();
    for (int64_t c = c0; c < c1; ++c) {
      const uint8_t* block = group + size_t(c) * l.block_bytes;
      if constexpr (Bits == 8) {
        // Lines in pairs, the even one into the first chain: the chain
        // is then known at compile time and stays in a register.
        for (int q = 0; q < 16; q += 2) {
#pragma GCC unroll 2
          for (int odd = 0; odd < 2; ++odd) {
            prefetch_weights_ahead(block + (q + odd) * 64);
            const __m512i w = _mm512_load_si512(block + (q + odd) * 64);
            for (int k = 0; k < T; ++k) {
              const int64_t at = (t0 + k) * l.padded_cols + c * kGroupChunk + 4 * (q + odd);
              dpbusd_into(hi[k][odd], broadcast4(t.x_hi + at), w);
              dpbusd_into(lo[k][odd], broadcast4(t.x_lo + at), w);
            }
          }
        }
      } else {
        for (int q = 0; q < 8; ++q) {
          prefetch_weights_ahead(block + q * 64);
          const __m512i line = _mm512_load_si512(block + q * 64);
          __m512i w0 = _mm512_and_si512(line, nibble);
          __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(line, 4), nibble);
          asm("" : "+v"(w0), "+v"(w1));
          for (int k = 0; k < T; ++k) {
            const int64_t at = (t0 + k) * l.padded_cols + c * kGroupChunk + 4 * q;
            dpbusd_into(hi[k][0], broadcast4(t.x_hi + at), w0);
            dpbusd_into(lo[k][0], broadcast4(t.x_lo + at), w0);
            dpbusd_into(hi[k][1], broadcast4(t.x_hi + at + 32), w1);
            dpbusd_into(lo[k][1], broadcast4(t.x_lo + at + 32), w1);
          }
        }
      }
    }
    if (!half_chunks) {
#pragma GCC unroll 4
      for (int k = 0; k < T; ++k) {
        acc[k] = close_span<Bits>(l, t, g, t0 + k, p, _mm512_add_epi32(hi[k][0], hi[k][1]), _mm512_add_epi32(lo[k][0], lo[k][1]), acc[k]);
      }
    } else {
      // The padding's half chunk, past the last span, holds no span.
      const bool second = 2 * p + 1 < l.n_spans;
#pragma GCC unroll 4
      for (int k = 0; k < T; ++k) {
        acc[k] = close_span<Bits>(l, t, g, t0 + k, 2 * p, hi[k][0], lo[k][0], acc[k]);
        if (second) acc[k] = close_span<Bits>(l, t, g, t0 + k, 2 * p + 1, hi[k][1], lo[k][1], acc[k]);
      }
    }
  }
  store_a16_tile<T>(t, g, t0, acc);
}

// Two groups' A16 products of 4-bit weights for T tokens from t0 (spans of
// whole chunks): each activation broadcast serves both groups' lines, so a
// line's products need half the broadcasts of a16_group's. One sum a
// (group, token, byte), 16 chains, and the products of a line and a token
// written out in one statement: with the intrinsics GCC 12 spilled the
// nibble vectors and sums to the stack on every line.
template <int T>
void a16_w4_group_pair(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 acc[2][T];
#pragma GCC unroll 4
  for (int k = 0; k < T; ++k) acc[0][k] = acc[1][k] = _mm512_setzero_ps();
  const size_t group_bytes = size_t(l.chunks) * l.block_bytes;
  const uint8_t* first = t.w + size_t(g) * group_bytes;
  const int64_t span_chunks = l.span / kGroupChunk;
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t c0 = s * span_chunks, c1 = std::min(l.chunks, c0 + span_chunks);
    __m512i hi[2][T], lo[2][T];
#pragma GCC unroll 4
    for (int k = 0; k < T; ++k) hi[0][k] = hi[1][k] = lo[0][k] = lo[1][k] = _mm512_setzero_si512();
    for (int64_t c = c0; c < c1; ++c) {
      const uint8_t* b0 = first + size_t(c) * l.block_bytes;
      const uint8_t* b1 = b0 + group_bytes;
      for (int q = 0; q < 8; ++q) {
        prefetch_weights_ahead(b0 + q * 64);
        prefetch_weights_ahead(b1 + q * 64);
        const __m512i line0 = _mm512_load_si512(b0 + q * 64), line1 = _mm512_load_si512(b1 + q * 64);
        __m512i w00 = _mm512_and_si512(line0, nibble), w01 = _mm512_and_si512(_mm512_srli_epi16(line0, 4), nibble);
        __m512i w10 = _mm512_and_si512(line1, nibble), w11 = _mm512_and_si512(_mm512_srli_epi16(line1, 4), nibble);
        asm("" : "+v"(w00), "+v"(w01), "+v"(w10), "+v"(w11));
#pragma GCC unroll 4
        for (int k = 0; k < T; ++k) {
          const int64_t at = (t0 + k) * l.padded_cols + c * kGroupChunk + 4 * q;
          __m512i b0, b1;
          asm("vpbroadcastd %[xh0], %[b0]\n\t"
              "vpbroadcastd %[xl0], %[b1]\n\t"
              "vpdpbusd %[w00], %[b0], %[h0]\n\t"
              "vpdpbusd %[w10], %[b0], %[h1]\n\t"
              "vpdpbusd %[w00], %[b1], %[l0]\n\t"
              "vpdpbusd %[w10], %[b1], %[l1]\n\t"
              "vpbroadcastd %[xh1], %[b0]\n\t"
              "vpbroadcastd %[xl1], %[b1]\n\t"
              "vpdpbusd %[w01], %[b0], %[h0]\n\t"
              "vpdpbusd %[w11], %[b0], %[h1]\n\t"
              "vpdpbusd %[w01], %[b1], %[l0]\n\t"
              "vpdpbusd %[w11], %[b1], %[l1]"
              : [h0] "+v"(hi[0][k]), [h1] "+v"(hi[1][k]), [l0] "+v"(lo[0][k]), [l1] "+v"(lo[1][k]), [b0] "=&v"(b0), [b1] "=&v"(b1)
              : [w00] "v"(w00), [w01] "v"(w01), [w10] "v"(w10), [w11] "v"(w11), [xh0] "m"(four_bytes(t.x_hi + at)),
                [xl0] "m"(four_bytes(t.x_lo + at)), [xh1] "m"(four_bytes(t.x_hi + at + 32)), [xl1] "m"(four_bytes(t.x_lo + at + 32)));
        }
      }
    }
#pragma GCC unroll 4
    for (int k = 0; k < T; ++k) {
      acc[0][k] = close_span<4>(l, t, g, t0 + k, s, hi[0][k], lo[0][k], acc[0][k]);
      acc[1][k] = close_span<4>(l, t, g + 1, t0 + k, s, hi[1][k], lo[1][k], acc[1][k]);
    }
  }
  store_a16_tile<T>(t, g, t0, acc[0]);
  store_a16_tile<T>(t, g + 1, t0, acc[1]);
}

template <int T>
void a8_group(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) {
  // Even lines into `even`, odd ones into `odd`: two chains a token. The
  // loops over tokens are unrolled before the compiler decides where the
  // arrays live, so that they stay in registers.
  __m512i even[T], odd[T];
#pragma GCC unroll 4
  for (int k = 0; k < T; ++k) even[k] = odd[k] = _mm512_setzero_si512();
  const uint8_t* group = t.w + size_t(g) * size_t(l.chunks) * l.block_bytes;
  const uint8_t* x = t.x8 + t0 * l.padded_cols;  // token t0 + k at x + k * padded_cols
  for (int64_t c = 0; c < l.chunks; ++c) {
    const uint8_t* block = group + size_t(c) * l.block_bytes;
    const uint8_t* xc = x + c * kGroupChunk;
    for (int q = 0; q < 16; q += 2) {
      prefetch_weights_ahead(block + q * 64);
      prefetch_weights_ahead(block + (q + 1) * 64);
      const __m512i w0 = _mm512_load_si512(block + q * 64), w1 = _mm512_load_si512(block + (q + 1) * 64);
#pragma GCC unroll 4
      for (int k = 0; k < T; ++k) {
        dpbusd_into(even[k], broadcast4(xc + k * l.padded_cols + 4 * q), w0);
        dpbusd_into(odd[k], broadcast4(xc + k * l.padded_cols + 4 * (q + 1)), w1);
      }
    }
  }
  const __mmask16 valid = row_mask(t.rows - g * kRowGroup);
#pragma GCC unroll 4
  for (int k = 0; k < T; ++k) {
    float* y = t.y + (t0 + k) * t.y_stride + g * kRowGroup;
    const __m512i sum = _mm512_add_epi32(even[k], odd[k]);
    _mm512_mask_storeu_ps(y, valid, a8_row_result(sum, t, g, t.x_scales[t0 + k]));
  }
}

template <int T>
struct A16W8 {
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) { a16_group<8, T>(l, t, g, t0); }
};
template <int T>
struct A16W4 {
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) { a16_group<4, T>(l, t, g, t0); }
};
template <int T>
struct A8W8 {
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) { a8_group<T>(l, t, g, t0); }
};

// A thread's groups go in blocks of about this many weight bytes, each
// block through every tile of tokens before the next, so that a block
// stays in L2 while the tiles pass over it. Tile by tile over all of a
// thread's groups, a weight larger than L2 (Qwen2.5's 4864 x 896 at 4 bits
// is 1.1 MB a thread) came from L3 or memory once for every four tokens,
// and two threads scaled to 1.4x of one.
constexpr size_t kBlockBytes = size_t(256) << 10;

int64_t block_groups(const IntGroupLayout& l) {
  const size_t group_bytes = size_t(l.chunks) * l.block_bytes;
  return std::max<int64_t>(2, int64_t(kBlockBytes / group_bytes) / 2 * 2);  // even, so pairs stay whole
}

// Every tile of tokens through groups [g0, g1); with `Pairs` (4-bit spans of
// whole chunks), full tiles take the groups two at a time. A pair gives
// each group the sums a16_group does, so the bits do not depend on it.
template <template <int> class Fn, bool Pairs>
void tiles_over(const IntGroupLayout& l, const IntGroupTask& t, int64_t g0, int64_t g1) {
  for (int64_t t0 = 0; t0 < t.n_tokens; t0 += kTokenTile) {
    const int64_t n = std::min<int64_t>(kTokenTile, t.n_tokens - t0);
    int64_t g = g0;
    if constexpr (Pairs) {
      if (n == kTokenTile) {
        for (; g + 1 < g1; g += 2) a16_w4_group_pair<kTokenTile>(l, t, g, t0);
      }
    }
    for (; g < g1; ++g) {
      switch (n) {
        case 1: Fn<1>::run(l, t, g, t0); break;
        case 2: Fn<2>::run(l, t, g, t0); break;
        case 3: Fn<3>::run(l, t, g, t0); break;
        default: Fn<4>::run(l, t, g, t0); break;
      }
    }
  }
}

// For one to four tokens (a single tile) the weights stream once, in order.
template <template <int> class Fn, bool Pairs = false>
void over_token_tiles(const IntGroupLayout& l, const IntGroupTask& t) {
  const int64_t block = block_groups(l);
  for (int64_t g0 = 0; g0 < t.groups; g0 += block) tiles_over<Fn, Pairs>(l, t, g0, std::min(t.groups, g0 + block));
}

void a16(const IntGroupLayout& l, const IntGroupTask& t) {
  if (l.bits == 8) over_token_tiles<A16W8>(l, t);
  else if (l.span >= kGroupChunk) over_token_tiles<A16W4, true>(l, t);
  else over_token_tiles<A16W4>(l, t);
}

void a8(const IntGroupLayout& l, const IntGroupTask& t) { over_token_tiles<A8W8>(l, t); }

}  // namespace

IntGroupKernels avx512_group_kernels() {
  IntGroupKernels k;
  k.a16 = a16;
  k.a8 = a8;
  return k;
}

}  // namespace tessera::cpu
