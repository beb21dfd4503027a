// A16 row groups on AVX2 for many tokens. A group's weights are widened to
// int16 once for a run of tokens, and the tokens' activations laid out in
// tiles, so the products only load, multiply and add:
//
// - Pair line i of a widened group holds columns 2i and 2i + 1 of its 16
//   rows: (16 rows, 2 columns) int16, 64 bytes, two vectors of eight rows,
//   each row less its zero point for the span the column lies in. vpmaddwd
//   of a vector with the pair's activations (broadcast to every doubleword)
//   leaves in each lane one row's sum over the pair: a span's sums are the
//   rows' own lanes, with no horizontal adds at its end.
// - A tile of T tokens is (padded_cols / 2, T, 2) int16: a pair line's
//   activations are one run of 4T bytes and a tile's are one stream.
//
// The integer sums are exact and each span's sum joins the row's f32 sum
// as in the other row-group kernels (int_linear_groups.h): the same bits.
#include "kernels/cpu/linear/int_linear_groups_wide_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/tensor/aligned_buffer.h"
#include "kernels/cpu/linear/row_lanes_avx2.h"

namespace tessera::cpu {
namespace {

// Six tokens a tile: 12 sums, two weight vectors and one activation fill
// the 16 vector registers, and each weight load serves six tokens (four
// a tile ran about 10% slower on Zen 3).
constexpr int kTileTokens = 6;
constexpr int64_t kPairBytes = 64;  // one pair line: 16 rows x 2 columns x int16
// Tokens that go through every group before the next tokens do, in whole
// tiles: their activations (132 x 896 columns as int16, 231 KiB for
// Qwen2.5's gate/up) stay in L2 for all the groups, where all of a
// prompt's (896 KiB) were read from L3 once a group. Each group is widened
// again for each run of tokens, about 1 µs against 40 µs of products.
constexpr int64_t kTokenRun = 22 * kTileTokens;
// Widened weights go in blocks of at most 640 columns: a block (16 rows x
// 640 columns, 20 KiB) and a tile's activations (6 tokens, 7.5 KiB) then
// stay in L1 while every tile passes over them.
constexpr int64_t kBlockColumns = 640;

struct Spans {
  int64_t begin, end;
};

// Spans a block of columns takes: at most kBlockColumns columns, the row's
// spans shared evenly among the fewest such blocks (a 576-column row is one
// block, not 512 columns and a short pass of 64 whose setup weighs like a
// long one's).
int64_t block_spans(const IntGroupLayout& l) {
  if (l.padded_cols <= kBlockColumns) return l.n_spans;
  const int64_t most = std::max<int64_t>(1, kBlockColumns / l.span);
  const int64_t blocks = (l.n_spans + most - 1) / most;
  return (l.n_spans + blocks - 1) / blocks;
}

// Eight rows' zero points (int32 in [0, 15]) as the int16 lanes of a pair
// vector: each row's zero in both of its columns' lanes.
__m256i pair_zeros(const int32_t* zeros) {
  const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zeros));
  return _mm256_or_si256(z, _mm256_slli_epi32(z, 16));
}

// 32 bytes of a stored line (eight rows of four columns, byte 4r + j) as
// the bytes of two pair vectors: columns 0-1 of the eight rows in the low
// half, columns 2-3 in the high half.
__m256i split_pairs(__m256i rows4) {
  const __m256i by_pair = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,  //
                                           0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  // Per 128-bit lane: four rows' columns 0-1, then their columns 2-3; the
  // permute puts rows 0-3 and 4-7 of each pair side by side.
  return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(rows4, by_pair), 0xD8);
}

void store_pair(uint8_t* wide, int64_t pair, int half, __m256i v) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(wide + pair * kPairBytes + 32 * half), v);
}

// One group of 8- or 4-bit blocks (int_linear_groups.h) as pair lines:
// `wide` receives padded_cols / 2 lines. `zeros`: the group's (n_spans, 16)
// zero points of 4-bit weights, or null; subtracted here, the products give
// sum(x w) - zero * sum(x) as they are.
void widen_group(const IntGroupLayout& l, const uint8_t* w, const int32_t* zeros, uint8_t* wide) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (int64_t c = 0; c < l.chunks; ++c) {
    const uint8_t* in = w + size_t(c) * l.block_bytes;
    const int64_t pair0 = c * kGroupChunk / 2;
    for (int half = 0; half < 2; ++half) {  // rows 8 * half .. 8 * half + 7: bytes 32 * half of each line
      if (l.bits == 8) {
        for (int q = 0; q < 16; ++q) {  // line q: columns 4q .. 4q + 3
          const __m256i v = split_pairs(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + q * 64 + 32 * half)));
          store_pair(wide, pair0 + 2 * q, half, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)));
          store_pair(wide, pair0 + 2 * q + 1, half, _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)));
        }
        continue;
      }
      // Low nibbles hold columns 0-31, high ones 32-63: they may lie in
      // different spans, and the last span runs on to the padded end.
      const auto zero_of = [&](int64_t col) {
        if (!zeros) return _mm256_setzero_si256();
        const int64_t span = std::min(col / l.span, l.n_spans - 1);
        return pair_zeros(zeros + size_t(span * kRowGroup + 8 * half));
      };
      const __m256i low_zero = zero_of(c * kGroupChunk), high_zero = zero_of(c * kGroupChunk + 32);
      for (int q = 0; q < 8; ++q) {  // line q: columns 4q .. 4q + 3 low, 32 + 4q .. high
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + q * 64 + 32 * half));
        const __m256i low = split_pairs(_mm256_and_si256(raw, nibble));
        const __m256i high = split_pairs(_mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble));
        const auto widen = [](__m128i bytes, __m256i zero) { return _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), zero); };
        store_pair(wide, pair0 + 2 * q, half, widen(_mm256_castsi256_si128(low), low_zero));
        store_pair(wide, pair0 + 2 * q + 1, half, widen(_mm256_extracti128_si256(low, 1), low_zero));
        store_pair(wide, pair0 + 16 + 2 * q, half, widen(_mm256_castsi256_si128(high), high_zero));
        store_pair(wide, pair0 + 17 + 2 * q, half, widen(_mm256_extracti128_si256(high, 1), high_zero));
      }
    }
  }
}

// Tokens [0, n) of x (rows of padded_cols int16) as tiles of kTileTokens
// tokens, the last one shorter where n is not a multiple: the tile of T
// tokens from t0 at tiles + t0 * padded_cols, (padded_cols / 2, T, 2).
void pack_tiles(const IntGroupLayout& l, const int16_t* x, int64_t n, int16_t* tiles) {
  static_assert(kTileTokens == 6, "the transpose below takes six tokens");
  const int64_t cols = l.padded_cols;
  int64_t t0 = 0;
  for (; t0 + kTileTokens <= n; t0 += kTileTokens) {
    // Four pairs of six tokens at a time: a 4 x 4 transpose of doublewords
    // for tokens 0-3 (16 bytes a pair), and tokens 4-5 interleaved (8 bytes).
    const int16_t* row = x + t0 * cols;
    uint8_t* out = reinterpret_cast<uint8_t*>(tiles + t0 * cols);
    for (int64_t c = 0; c < cols; c += 8, out += 4 * 4 * kTileTokens) {
      __m128i v[kTileTokens];
      for (int k = 0; k < kTileTokens; ++k) v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k * cols + c));
      const __m128i ab_low = _mm_unpacklo_epi32(v[0], v[1]), ab_high = _mm_unpackhi_epi32(v[0], v[1]);
      const __m128i cd_low = _mm_unpacklo_epi32(v[2], v[3]), cd_high = _mm_unpackhi_epi32(v[2], v[3]);
      const __m128i ef_low = _mm_unpacklo_epi32(v[4], v[5]), ef_high = _mm_unpackhi_epi32(v[4], v[5]);
      const __m128i first4[4] = {_mm_unpacklo_epi64(ab_low, cd_low), _mm_unpackhi_epi64(ab_low, cd_low),
                                 _mm_unpacklo_epi64(ab_high, cd_high), _mm_unpackhi_epi64(ab_high, cd_high)};
      const __m128i last2[4] = {ef_low, _mm_unpackhi_epi64(ef_low, ef_low), ef_high, _mm_unpackhi_epi64(ef_high, ef_high)};
      for (int p = 0; p < 4; ++p) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + p * 4 * kTileTokens), first4[p]);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + p * 4 * kTileTokens + 16), last2[p]);
      }
    }
  }
  if (t0 == n) return;
  const int64_t tile = n - t0;
  int16_t* out = tiles + t0 * cols;
  for (int64_t c = 0; c < cols; c += 2) {
    for (int64_t k = 0; k < tile; ++k, out += 2) std::memcpy(out, x + (t0 + k) * cols + c, 2 * sizeof(int16_t));
  }
}

// The end of a span for a tile of T tokens: the span's exact sums join the
// rows' f32 sums, which wait in y (token k's 16 rows at y + k * y_stride)
// between spans; the last span scales them by the token's scale.
template <int T>
__attribute__((always_inline)) inline void join_span(const __m256i (&sum)[2][T], const float* scales, float* y, int64_t y_stride,
                                                     bool first, bool last, const float (&x_scale)[T],
                                                     const RowLanes (&lanes)[2]) {
  #pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256 scale = _mm256_loadu_ps(scales + 8 * h);
    #pragma GCC unroll 6
    for (int k = 0; k < T; ++k) {
      float* out = y + k * y_stride + 8 * h;
      const __m256 before = first ? _mm256_setzero_ps() : lanes[h].load(out);
      __m256 acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[h][k]), scale, before);
      if (last) acc = _mm256_mul_ps(acc, _mm256_set1_ps(x_scale[k]));
      lanes[h].store(out, acc);
    }
  }
}

// The products of one widened group (t.w, pair lines) with the tile of T
// tokens from t0 (t.x16, pack_tiles) over the given spans: 2 x T sums, the
// group's 16 rows in two vectors for each token. What the loops read of
// the task is copied to locals first: stores to y could alias it.
template <int T>
void tile_products(const IntGroupLayout& l, const IntGroupTask& t, int64_t t0, Spans spans) {
  const RowLanes lanes[2] = {RowLanes(t.rows), RowLanes(t.rows - 8)};
  const int16_t* x = t.x16 + t0 * l.padded_cols;
  const uint8_t* w = t.w;
  const float* scales = t.scales;
  float* y = t.y + t0 * t.y_stride;
  const int64_t y_stride = t.y_stride, span = l.span, n_spans = l.n_spans, pairs = l.padded_cols / 2;
  float x_scale[T];
  for (int k = 0; k < T; ++k) x_scale[k] = t.x_scales[t0 + k];
  for (int64_t s = spans.begin; s < spans.end; ++s) {
    const int64_t begin = s * span / 2, end = s + 1 == n_spans ? pairs : (s + 1) * span / 2;  // pair lines
    __m256i sum[2][T];
    #pragma GCC unroll 6
    for (int k = 0; k < T; ++k) sum[0][k] = sum[1][k] = _mm256_setzero_si256();
    const uint8_t* line = w + begin * kPairBytes;
    const int16_t* xp = x + begin * 2 * T;
    for (int64_t i = begin; i < end; ++i, line += kPairBytes, xp += 2 * T) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(line));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 32));
      #pragma GCC unroll 6
      for (int k = 0; k < T; ++k) {
        int32_t pair;
        std::memcpy(&pair, xp + 2 * k, sizeof pair);
        const __m256i xb = _mm256_set1_epi32(pair);
        sum[0][k] = _mm256_add_epi32(sum[0][k], _mm256_madd_epi16(w0, xb));
        sum[1][k] = _mm256_add_epi32(sum[1][k], _mm256_madd_epi16(w1, xb));
      }
    }
    join_span<T>(sum, scales + s * kRowGroup, y, y_stride, s == 0, s + 1 == n_spans, x_scale, lanes);
  }
}

// One widened group against a run of tokens in tiles: the spans in blocks
// (block_spans), every tile through a block before the next block, so each
// (row, token) still takes its spans in order.
void group_products(const IntGroupLayout& l, const IntGroupTask& t, int64_t spans_per_block) {
  for (int64_t s0 = 0; s0 < l.n_spans; s0 += spans_per_block) {
    const Spans spans{s0, std::min(l.n_spans, s0 + spans_per_block)};
    for (int64_t t0 = 0; t0 < t.n_tokens; t0 += kTileTokens) {
      switch (std::min<int64_t>(kTileTokens, t.n_tokens - t0)) {
        case 1: tile_products<1>(l, t, t0, spans); break;
        case 2: tile_products<2>(l, t, t0, spans); break;
        case 3: tile_products<3>(l, t, t0, spans); break;
        case 4: tile_products<4>(l, t, t0, spans); break;
        case 5: tile_products<5>(l, t, t0, spans); break;
        default: tile_products<6>(l, t, t0, spans); break;
      }
    }
  }
}

}  // namespace

void a16_widened_avx2(const IntGroupLayout& l, const IntGroupTask& t) {
  const int64_t spans_per_block = block_spans(l);
  // One group widened and one run of tokens in tiles, at cache-line
  // alignment; every element is written (widen_group, pack_tiles) before
  // it is read: no fill.
  const AlignedBuffer wide(size_t(l.padded_cols / 2 * kPairBytes));
  const AlignedBuffer tiles(size_t(std::min(kTokenRun, t.n_tokens) * l.padded_cols) * sizeof(int16_t));
  for (int64_t t0 = 0; t0 < t.n_tokens; t0 += kTokenRun) {
    IntGroupTask run = t;  // tokens [t0, t0 + kTokenRun), counted from t0
    run.n_tokens = std::min(kTokenRun, t.n_tokens - t0);
    run.x16 = tiles.data_as<int16_t>();
    run.x_scales = t.x_scales + t0;
    pack_tiles(l, t.x16 + t0 * l.padded_cols, run.n_tokens, tiles.data_as<int16_t>());
    for (int64_t g = 0; g < t.groups; ++g) {
      // The group as a task of its own; its zero points are in the widened weights.
      const size_t at = size_t(g * l.n_spans * kRowGroup);
      widen_group(l, t.w + size_t(g * l.chunks) * l.block_bytes, t.zeros ? t.zeros + at : nullptr, wide.data_as<uint8_t>());
      IntGroupTask group = run;
      group.w = wide.data_as<uint8_t>();
      group.scales = t.scales + at;
      group.zeros = nullptr;
      group.groups = 1;
      group.rows = t.rows - g * kRowGroup;
      group.y = t.y + t0 * t.y_stride + g * kRowGroup;
      group_products(l, group, spans_per_block);
    }
  }
}

}  // namespace tessera::cpu
