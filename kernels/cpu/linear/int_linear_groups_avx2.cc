// Row-group kernels on AVX2 (the layout and arithmetic are in
// int_linear_groups.h). A 16-byte quarter of a weight line holds four
// columns of four rows; widened to int16 and multiplied with vpmaddwd
// against those four columns' int16 activations (broadcast to every
// quadword), each lane ends as one row's sum over a pair of columns, so one
// horizontal add a span gives each row its exact span sum. The sums, the
// span scales and the rounding are those of the AVX-512 and AMX kernels:
// every instruction set's row groups give the same bits.
//
// DA8 multiplies bytes: vpmaddubsw of |w| with x carrying w's sign (exact,
// no pair exceeds 2 * 127 * 127), then vpmaddwd with ones, so each lane
// holds one row's sum over the line's four columns.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/cpu/linear/int_linear_groups.h"
#include "kernels/cpu/linear/weight_prefetch.h"

namespace tessera::cpu {
namespace {

constexpr int kTokenTile = 4;
// Groups a thread takes in turn through every tile of tokens, and the
// columns of a block of spans, so that the block's weights (16 rows x 1024
// columns x 8 groups: 128 KiB in bytes) stay in L2 while the tiles pass
// over them (token_tiles). Widened weights take smaller blocks (below).
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

// Eight rows' outputs, of which the first `rows_left` are real. Masked
// moves only at the weight's last rows: on some cores (AMD's) a masked
// store is microcoded and far slower than a plain one.
struct RowLanes {
  int64_t rows_left;
  __m256i mask;
  explicit RowLanes(int64_t left)
      : rows_left(left),
        mask(_mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(std::clamp<int64_t>(left, 0, 8))),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))) {}
  __m256 load(const float* y) const { return rows_left >= 8 ? _mm256_loadu_ps(y) : _mm256_maskload_ps(y, mask); }
  void store(float* y, __m256 v) const {
    if (rows_left >= 8) _mm256_storeu_ps(y, v);
    else _mm256_maskstore_ps(y, mask, v);
  }
};

// Two quarters' lanes (row, column pair), rows 4k .. 4k + 7, as the eight
// rows' sums in order.
__m256i row_sums(__m256i first_quarter, __m256i second_quarter) {
  // hadd gives rows 0 1 4 5 | 2 3 6 7; the permute puts the quadwords in order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(first_quarter, second_quarter), 0xD8);
}

// The end of span s for the pass's rows and tokens: each row's exact span
// sum (less zero * sum(x) for 4-bit weights read as nibbles; widened ones
// carry their zero points, see widen_group) joins its f32 sum, which
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
// register tiles: Q * T integer sums. Bits: 8 or 4 as stored, 16 for the
// int16 blocks of widen_group.
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
      constexpr int kLineBytes = Bits == 16 ? 128 : 64;
      const int16_t* xq = xc + 4 * at.q0;
      const uint8_t* line = block + at.q0 * kLineBytes + (kLineBytes / 4) * q0;
      for (int q = at.q0; q < at.q1; ++q, line += kLineBytes, xq += 4) {
        prefetch_weights_ahead(line);
        // The quarters' weights first, then one token at a time: Q weight
        // vectors, one activation and Q * T sums are live, all in registers.
        if constexpr (Bits >= 8) {
          __m256i w[Q];
          #pragma GCC unroll 4
          for (int i = 0; i < Q; ++i) {
            w[i] = Bits == 16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + 32 * i)) : widen_signed(line + 16 * i);
          }
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
struct A16W16 {  // weights widened to int16 (widen_group)
  static void run(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t t0, Spans spans) {
    a16_group<16, T>(l, t, g, t0, spans);
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

// From this many tokens, groups are widened to int16 a block at a time:
// the weights are widened once for every tile of tokens rather than once a
// tile, and the products then load them as they are, leaving the vector
// units to the multiplies and sums (each 8-bit line was widened again by
// every tile, a quarter of the loop's vector instructions).
constexpr int64_t kWidenMinTokens = 16;
constexpr size_t kWideBlockBytes = 2048;  // 16 lines x 16 rows x 4 columns x int16
// Tokens that go through every group before the next tokens do: their
// activations (128 x 896 columns as int16, 224 KiB for Qwen2.5's gate/up)
// stay in L2 for all the groups, where all of a prompt's (896 KiB) were
// read from L3 once a group. Each group is widened again for each run of
// tokens, about 1 µs against 40 µs of products. Qwen2.5's a16w4 prompt,
// five interleaved runs on the EPYC: median 176 tok/s against 156.
constexpr int64_t kWidenTokenChunk = 128;
// Widened weights go one group at a time, in blocks of at most 640
// columns: a block's int16 weights (16 rows x 640 columns, 20 KiB) and a
// tile's activations (4 tokens, 5 KiB) then stay in L1 while every tile
// passes over them, where eight groups of 1024 columns (256 KiB) were read
// from L2 by each tile. Qwen2.5's a16w4 prompt on an AVX2-only EPYC,
// interleaved runs: 185-233 tok/s against 171-193 with the eight-group
// blocks.
constexpr int64_t kWidenBlockColumns = 640;

// Spans a block of widened columns takes: at most kWidenBlockColumns
// columns, the row's spans shared evenly among the fewest such blocks (a
// 576-column row is one block, not 512 columns and a short pass of 64
// whose setup weighs like a long one's).
int64_t widened_block_spans(const IntGroupLayout& l) {
  if (l.padded_cols <= kWidenBlockColumns) return l.n_spans;
  const int64_t most = std::max<int64_t>(1, kWidenBlockColumns / l.span);
  const int64_t blocks = (l.n_spans + most - 1) / most;
  return (l.n_spans + blocks - 1) / blocks;
}

// Four rows' zero points (int32, from `zeros`) as the int16 lanes of a
// widened quarter: each row's zero in its four columns' lanes.
__m256i quarter_zeros(const int32_t* zeros) {
  const auto lane = [&](int n) { return int64_t(uint16_t(zeros[n])) * 0x0001000100010001LL; };
  return _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3));
}

// One group of 8- or 4-bit blocks as int16 blocks, each line's quarters
// (four rows of four columns) in order: line q of a 4-bit block holds lines
// q (low nibbles) and q + 8 (high nibbles) of the wide one, less each row's
// zero point for the span the column lies in (`zeros`: the group's
// (n_spans, 16) zero points), so the products give sum(x w) - zero * sum(x)
// as they are and no span end multiplies zeros by activation sums.
void widen_group(const IntGroupLayout& l, const uint8_t* w, const int32_t* zeros, uint8_t* wide) {
  const __m256i nibble = _mm256_set1_epi16(0x0F);
  for (int64_t c = 0; c < l.chunks; ++c) {
    const uint8_t* in = w + size_t(c) * l.block_bytes;
    auto* out = reinterpret_cast<__m256i*>(wide + size_t(c) * kWideBlockBytes);  // (16 lines, 4 quarters)
    if (l.bits == 8) {
      for (int q = 0; q < 16; ++q) {
        for (int i = 0; i < 4; ++i) _mm256_storeu_si256(out + 4 * q + i, widen_signed(in + q * 64 + 16 * i));
      }
      continue;
    }
    // Zero points of quarter i's rows in the span of column `col`: the
    // chunk's low nibbles (columns 0-31) and high ones (32-63) may lie in
    // different spans, and the last span runs on to the padded end.
    const int64_t column = c * kGroupChunk;
    const auto zero_of = [&](int64_t col, int i) {
      if (!zeros) return _mm256_setzero_si256();
      const int64_t span = std::min(col / l.span, l.n_spans - 1);
      return quarter_zeros(zeros + size_t(span * kRowGroup + 4 * i));
    };
    for (int i = 0; i < 4; ++i) {
      const __m256i low_zero = zero_of(column, i), high_zero = zero_of(column + 32, i);
      for (int q = 0; q < 8; ++q) {
        const __m256i v = widen_unsigned(in + q * 64 + 16 * i);
        _mm256_storeu_si256(out + 4 * q + i, _mm256_sub_epi16(_mm256_and_si256(v, nibble), low_zero));
        _mm256_storeu_si256(out + 4 * (q + 8) + i, _mm256_sub_epi16(_mm256_srli_epi16(v, 4), high_zero));
      }
    }
  }
}

// Tokens [t0, t0 + n) of task t as a task of their own, counted from t0.
IntGroupTask token_range(const IntGroupLayout& l, const IntGroupTask& t, int64_t t0, int64_t n) {
  IntGroupTask sub = t;
  const size_t columns = size_t(t0 * l.padded_cols);
  if (t.x16) sub.x16 = t.x16 + columns;
  if (t.x_hi) sub.x_hi = t.x_hi + columns;
  if (t.x_lo) sub.x_lo = t.x_lo + columns;
  if (t.x8) sub.x8 = t.x8 + columns;
  sub.x_scales = t.x_scales + t0;
  if (t.x_span_sums) sub.x_span_sums = t.x_span_sums + t0 * l.n_spans;
  sub.y = t.y + t0 * t.y_stride;
  sub.n_tokens = n;
  return sub;
}

void a16_widened(const IntGroupLayout& l, const IntGroupTask& t) {
  IntGroupLayout wide = l;
  wide.bits = 16;
  wide.block_bytes = kWideBlockBytes;
  const int64_t block_spans = widened_block_spans(l);
  // One group widened; every byte is written by widen_group before it is read: no fill.
  const auto group = std::make_unique_for_overwrite<uint8_t[]>(size_t(l.chunks) * kWideBlockBytes);
  for (int64_t t0 = 0; t0 < t.n_tokens; t0 += kWidenTokenChunk) {
    const IntGroupTask tokens = token_range(l, t, t0, std::min(kWidenTokenChunk, t.n_tokens - t0));
    for (int64_t g = 0; g < t.groups; ++g) {
      // The group as a task of its own; its zero points are in the widened weights.
      const size_t at = size_t(g * l.n_spans * kRowGroup);
      widen_group(l, t.w + size_t(g * l.chunks) * l.block_bytes, t.zeros ? t.zeros + at : nullptr, group.get());
      IntGroupTask sub = tokens;
      sub.w = group.get();
      sub.scales = t.scales + at;
      sub.zeros = nullptr;
      sub.offsets = t.offsets ? t.offsets + at : nullptr;
      sub.groups = 1;
      sub.rows = t.rows - g * kRowGroup;
      sub.y = tokens.y + g * kRowGroup;
      token_tiles<A16W16>(wide, sub, 0, 1, block_spans);
    }
  }
}

void a16(const IntGroupLayout& l, const IntGroupTask& t) {
  if (t.n_tokens >= kWidenMinTokens) a16_widened(l, t);
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
