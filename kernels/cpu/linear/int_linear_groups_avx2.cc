// Row-group kernels on AVX2 (the layout and arithmetic are in
// int_linear_groups.h). A 16-byte quarter of a weight line holds four
// columns of four rows; widened to int16 and multiplied with vpmaddwd
// against those four columns' int16 activations (broadcast to every
// quadword), each lane ends as one row's sum over a pair of columns, so one
// horizontal add a span gives each row its exact span sum. The sums, the
// span scales and the rounding are those of the AVX-512 and AMX kernels:
// every instruction set's row groups give the same bits.
//
// From kWidenMinTokens tokens A16 goes through int_linear_groups_wide_avx2.cc.
//
// DA8 multiplies bytes: vpmaddubsw of |w| with x carrying w's sign (exact,
// no pair exceeds 2 * 127 * 127), then vpmaddwd with ones, so each lane
// holds one row's sum over the line's four columns.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/linear/int_linear_groups.h"
#include "kernels/cpu/linear/int_linear_groups_wide_avx2.h"
#include "kernels/cpu/linear/row_lanes_avx2.h"
#include "kernels/cpu/linear/weight_prefetch.h"

namespace tessera::cpu {
namespace {

constexpr int kTokenTile = 4;
// Groups a thread takes in turn through every tile of tokens, and the
// columns of a block of spans, so that the block's weights (16 rows x 1024
// columns x 8 groups: 128 KiB in bytes) stay in L2 while the tiles pass
// over them (token_tiles).
constexpr int64_t kGroupBlock = 8;
constexpr int64_t kBlockColumns = 1024;

// Spans [begin, end) of a row, the part of the row a call takes.
struct Spans {
  int64_t begin, end;
};

__m256i broadcast8(const int16_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi64x(v);
}

__m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

__m256i widen_signed(const uint8_t* p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
__m256i widen_unsigned(const uint8_t* p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// Two quarters' lanes (row, column pair), rows 4k .. 4k + 7, as the eight
// rows' sums in order.
__m256i row_sums(__m256i first_quarter, __m256i second_quarter) {
  // hadd gives rows 0 1 4 5 | 2 3 6 7; the permute puts the quadwords in order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(first_quarter, second_quarter), 0xD8);
}

// The end of span s for the pass's rows and tokens: each row's exact span
// sum (less zero * sum(x) for 4-bit weights) joins its f32 sum, which
// waits in y between spans (a store and a load keep every bit, and leave
// the registers to the integer sums); the last span scales it by the
// token's scale.
template <int T, int Q>
__attribute__((always_inline)) inline void close_span(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0,
                                                      int q0, int64_t s, const RowLanes (&lanes)[2],
                                                      const __m256i (&sum)[Q][T]) {
  const size_t at = size_t((g * l.n_spans + s) * kRowGroup + 4 * q0);
  #pragma GCC unroll 4
  for (int h = 0; h < Q / 2; ++h) {
    const __m256 scale = _mm256_loadu_ps(t.scales + at + 8 * h);
    #pragma GCC unroll 4
    for (int k = 0; k < T; ++k) {
      __m256i span_sum = row_sums(sum[2 * h][k], sum[2 * h + 1][k]);
      if (t.zeros) {
        const __m256i zeros = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.zeros + at + 8 * h));
        const __m256i x_sum = _mm256_set1_epi32(t.x_span_sums[(t0 + k) * l.n_spans + s]);
        span_sum = _mm256_sub_epi32(span_sum, _mm256_mullo_epi32(zeros, x_sum));
      }
      float* y = t.y + (t0 + k) * t.y_stride + g * kRowGroup + 4 * q0 + 8 * h;
      const __m256 before = s == 0 ? _mm256_setzero_ps() : lanes[h].load(y);
      __m256 acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(span_sum), scale, before);
      if (s + 1 == l.n_spans) acc = _mm256_mul_ps(acc, _mm256_set1_ps(t.x_scales[t0 + k]));
      lanes[h].store(y, acc);
    }
  }
}

// Where span s lies in the blocks: chunks [c0, c1), and in each the lines
// [q0, q1) of the 8-bit layout. A span of 32 columns is half a chunk: lines
// 0-7 or 8-15 of an 8-bit block, the low or the high nibbles (`half` 0 or 1)
// of a 4-bit one; half is -1 for spans of whole chunks.
struct SpanLines {
  int64_t c0, c1;
  int q0, q1, half;
};

SpanLines span_lines(const IntGroupLayout& l, int64_t s) {
  if (l.span < kGroupChunk) {
    const int half = int(s % 2);
    return {s / 2, s / 2 + 1, 8 * half, 8 * half + 8, half};
  }
  const int64_t c0 = s * (l.span / kGroupChunk);
  return {c0, std::min(l.chunks, c0 + l.span / kGroupChunk), 0, l.bits == 4 ? 8 : 16, -1};
}

// A 4-bit block's low (half 0) or high (half 1) nibbles, columns 32 * half
// onwards of the chunk at xc, into the Q x T sums (see a16_pass).
template <int T, int Q>
__attribute__((always_inline)) inline void half_chunk_products(const IntGroupLayout& l, const uint8_t* block,
                                                               const int16_t* xc, int half, __m256i (&sum)[Q][T]) {
  const __m256i nibble = _mm256_set1_epi16(0x0F);
  const __m128i shift = _mm_cvtsi32_si128(4 * half);
  const int16_t* xh = xc + 32 * half;
  for (int q = 0; q < 8; ++q) {
    const uint8_t* line = block + q * 64;
    prefetch_weights_ahead(line);
    __m256i w[Q];
    #pragma GCC unroll 4
    for (int i = 0; i < Q; ++i) w[i] = _mm256_and_si256(_mm256_srl_epi16(widen_unsigned(line + 16 * i), shift), nibble);
    #pragma GCC unroll 4
    for (int k = 0; k < T; ++k) {
      const __m256i xb = broadcast8(xh + k * l.padded_cols + 4 * q);
      #pragma GCC unroll 4
      for (int i = 0; i < Q; ++i) sum[i][k] = _mm256_add_epi32(sum[i][k], _mm256_madd_epi16(w[i], xb));
    }
  }
}

// One group's A16 products, rows 4 * q0 .. 4 * (q0 + Q) - 1, for T tokens
// from t0, over the given spans. Q quarters (2 or 4) and T tokens are
// register tiles: Q * T integer sums. Bits: 8 or 4 as stored.
template <int Bits, int T, int Q>
void a16_pass(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, int q0, Spans spans) {
  const __m256i nibble = _mm256_set1_epi16(0x0F);
  const RowLanes lanes[2] = {RowLanes(t.rows - (g * kRowGroup + 4 * q0)), RowLanes(t.rows - (g * kRowGroup + 4 * q0 + 8))};
  const uint8_t* group = t.w + size_t(g) * size_t(l.chunks) * l.block_bytes;
  const int16_t* x = t.x16 + t0 * l.padded_cols;  // token t0 + k at x + k * padded_cols
  for (int64_t s = spans.begin; s < spans.end; ++s) {
    const SpanLines at = span_lines(l, s);
    __m256i sum[Q][T];
    #pragma GCC unroll 4
    for (int i = 0; i < Q; ++i) {
      #pragma GCC unroll 4
      for (int k = 0; k < T; ++k) sum[i][k] = _mm256_setzero_si256();
    }
    for (int64_t c = at.c0; c < at.c1; ++c) {
      const uint8_t* block = group + size_t(c) * l.block_bytes;
      const int16_t* xc = x + c * kGroupChunk;
      if (Bits == 4 && at.half >= 0) {
        half_chunk_products<T, Q>(l, block + 16 * q0, xc, at.half, sum);
        continue;
      }
      // Token k's columns of line q at xq + k * padded_cols: pointers that
      // step with the lines, where indices recomputed each line's addresses.
      const int16_t* xq = xc + 4 * at.q0;
      const uint8_t* line = block + at.q0 * 64 + 16 * q0;
      for (int q = at.q0; q < at.q1; ++q, line += 64, xq += 4) {
        prefetch_weights_ahead(line);
        // The quarters' weights first, then one token at a time: Q weight
        // vectors, one activation and Q * T sums are live, all in registers.
        if constexpr (Bits == 8) {
          __m256i w[Q];
          #pragma GCC unroll 4
          for (int i = 0; i < Q; ++i) w[i] = widen_signed(line + 16 * i);
          #pragma GCC unroll 4
          for (int k = 0; k < T; ++k) {
            const __m256i xb = broadcast8(xq + k * l.padded_cols);
            #pragma GCC unroll 4
            for (int i = 0; i < Q; ++i) sum[i][k] = _mm256_add_epi32(sum[i][k], _mm256_madd_epi16(w[i], xb));
          }
        } else {
          // Low and high nibbles of the quarters, then one token at a time.
          __m256i low[Q], high[Q];
          #pragma GCC unroll 4
          for (int i = 0; i < Q; ++i) {
            const __m256i raw = widen_unsigned(line + 16 * i);
            low[i] = _mm256_and_si256(raw, nibble);
            high[i] = _mm256_srli_epi16(raw, 4);
          }
          #pragma GCC unroll 4
          for (int k = 0; k < T; ++k) {
            const __m256i x_low = broadcast8(xq + k * l.padded_cols);
            const __m256i x_high = broadcast8(xq + k * l.padded_cols + 32);
            #pragma GCC unroll 4
            for (int i = 0; i < Q; ++i) {
              sum[i][k] = _mm256_add_epi32(sum[i][k], _mm256_madd_epi16(low[i], x_low));
              sum[i][k] = _mm256_add_epi32(sum[i][k], _mm256_madd_epi16(high[i], x_high));
            }
          }
        }
      }
    }
    close_span<T, Q>(l, t, g, t0, q0, s, lanes, sum);
  }
}

// One group's DA8 products, rows 8 * h0 .. 8 * (h0 + H) - 1, for T tokens.
template <int T, int H>
void a8_pass(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, int h0) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sum[H][T];
  #pragma GCC unroll 4
  for (int h = 0; h < H; ++h) {
    #pragma GCC unroll 4
    for (int k = 0; k < T; ++k) sum[h][k] = _mm256_setzero_si256();
  }
  const uint8_t* group = t.w + size_t(g) * size_t(l.chunks) * l.block_bytes;
  const auto* x = reinterpret_cast<const int8_t*>(t.x8) + t0 * l.padded_cols;  // signed on AVX2
  for (int64_t c = 0; c < l.chunks; ++c) {
    const uint8_t* block = group + size_t(c) * l.block_bytes;
    const int8_t* xc = x + c * kGroupChunk;
    for (int q = 0; q < 16; ++q) {
      const uint8_t* line = block + q * 64 + 32 * h0;
      prefetch_weights_ahead(line);
      __m256i xb[T];
      #pragma GCC unroll 4
      for (int k = 0; k < T; ++k) xb[k] = broadcast4(xc + k * l.padded_cols + 4 * q);
      #pragma GCC unroll 4
      for (int h = 0; h < H; ++h) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + 32 * h));
        const __m256i w_abs = _mm256_sign_epi8(w, w);
        #pragma GCC unroll 4
        for (int k = 0; k < T; ++k) {
          const __m256i pairs = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(xb[k], w));
          sum[h][k] = _mm256_add_epi32(sum[h][k], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
  }
  #pragma GCC unroll 4
  for (int h = 0; h < H; ++h) {
    const int64_t row = g * kRowGroup + 8 * (h0 + h);
    const RowLanes lanes(t.rows - row);
    const __m256 scales = _mm256_loadu_ps(t.scales + 8 * (h0 + h) + g * kRowGroup);
    #pragma GCC unroll 4
    for (int k = 0; k < T; ++k) {
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(t.x_scales[t0 + k]), scales);
      lanes.store(t.y + (t0 + k) * t.y_stride + row, _mm256_mul_ps(_mm256_cvtepi32_ps(sum[h][k]), scale));
    }
  }
}

// A whole group for T tokens: one pass over all 16 rows for one or two
// tokens; for three or four, two passes of eight rows keep the sums in
// registers.
template <int Bits, int T>
void a16_group(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, Spans spans) {
  if constexpr (T <= 2) {
    a16_pass<Bits, T, 4>(l, t, g, t0, 0, spans);
  } else {
    a16_pass<Bits, T, 2>(l, t, g, t0, 0, spans);
    a16_pass<Bits, T, 2>(l, t, g, t0, 2, spans);
  }
}

template <int T>
void a8_group(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0) {
  if constexpr (T <= 2) {
    a8_pass<T, 2>(l, t, g, t0, 0);
  } else {
    a8_pass<T, 1>(l, t, g, t0, 0);
    a8_pass<T, 1>(l, t, g, t0, 1);
  }
}

template <int T>
struct A16W8 {
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, Spans spans) {
    a16_group<8, T>(l, t, g, t0, spans);
  }
};
template <int T>
struct A16W4 {
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, Spans spans) {
    a16_group<4, T>(l, t, g, t0, spans);
  }
};
template <int T>
struct A8W8 {  // DA8 has one span, the whole row
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, Spans) { a8_group<T>(l, t, g, t0); }
};

// Groups [g0, g1) of the task: the spans in blocks of `block` spans, and
// every tile of tokens through a block of spans before the next, so that
// each (row, token) still takes its spans in order, as the arithmetic
// wants.
template <template <int> class Fn>
void token_tiles(const IntGroupLayout& l, const IntGroupTask& t, int64_t g0, int64_t g1, int64_t block) {
  for (int64_t s0 = 0; s0 < l.n_spans; s0 += block) {
    const Spans spans{s0, std::min(l.n_spans, s0 + block)};
    for (int64_t t0 = 0; t0 < t.n_tokens; t0 += kTokenTile) {
      const int64_t n = std::min<int64_t>(kTokenTile, t.n_tokens - t0);
      for (int64_t g = g0; g < g1; ++g) {
        switch (n) {
          case 1: Fn<1>::run(l, t, g, t0, spans); break;
          case 2: Fn<2>::run(l, t, g, t0, spans); break;
          case 3: Fn<3>::run(l, t, g, t0, spans); break;
          default: Fn<4>::run(l, t, g, t0, spans); break;
        }
      }
    }
  }
}

// Blocks of groups outside, tiles of tokens inside them: a block's weights
// are read from memory once and from cache by every later tile. Spans go
// in blocks of about kBlockColumns columns: a tile's activations for a
// block (4 tokens x 1024 columns, 8 KiB) then stay in L1 for every group.
// A single tile (decode) takes each group's spans in one pass: it has no
// later tile to keep activations for, and a group read whole is one
// sequential stream, where blocks of columns interleaved the groups'
// streams and the prefetchers lost them (Qwen2.5's down projection, 4,864
// columns, read at 20 GB/s against 31 for gate/up, whose 896 columns make
// one block).
template <template <int> class Fn>
void over_token_tiles(const IntGroupLayout& l, const IntGroupTask& t) {
  const int64_t block = t.n_tokens <= kTokenTile ? l.n_spans : std::max<int64_t>(1, kBlockColumns / l.span);
  for (int64_t g0 = 0; g0 < t.groups; g0 += kGroupBlock) {
    token_tiles<Fn>(l, t, g0, std::min(t.groups, g0 + kGroupBlock), block);
  }
}

void a16(const IntGroupLayout& l, const IntGroupTask& t) {
  if (t.n_tokens >= kWidenMinTokens) a16_widened_avx2(l, t);
  else if (l.bits == 8) over_token_tiles<A16W8>(l, t);
  else over_token_tiles<A16W4>(l, t);
}

void a8(const IntGroupLayout& l, const IntGroupTask& t) { over_token_tiles<A8W8>(l, t); }

}  // namespace

IntGroupKernels avx2_group_kernels() {
  IntGroupKernels k;
  k.a16 = a16;
  k.a8 = a8;
  k.int16_activations = true;
  return k;
}

}  // namespace tessera::cpu
