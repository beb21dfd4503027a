// Row-group kernels on AMX int8 tiles (layout and arithmetic in
// int_linear_groups.h). A weight block is already a B tile; activation
// tiles are 16 tokens by 64 columns, loaded straight from the activation
// rows. Eight tiles: four int32 accumulators, two activation tiles and two
// weight tiles, so each loaded tile serves two products.
// - A16: the accumulators are (h, l) x (two row groups); each span's tiles
//   are stored and closed from the same exact integer as in the VNNI
//   kernels, rounded the same way (4-bit tiles carry the weights less their
//   zero points, see SpanClose), and the running sums live in y between spans.
// - DA8: the accumulators are (two token blocks) x (two row groups) over the
//   whole row.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/linear/int_linear_groups.h"
#include "kernels/cpu/linear/int_linear_groups_epilogue.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kMaxSpanChunks = 8;  // spans of at most 512 columns
constexpr size_t kTileBytes = 1024;
// Activation bytes of the tokens one pass over the weights serves: they stay
// in L2 while the weights stream past (beyond it, every row group would
// fetch them again from further out).
constexpr int64_t kActivationBudget = 1 << 20;
// A span's activations and running sums kept in L2 when spans go outermost.
constexpr int64_t kSpanPassBudget = 3 << 19;

// Tokens per pass over the weights, a multiple of 32.
int64_t tokens_per_pass(const IntGroupLayout& l) {
  const int64_t bytes_per_token = l.padded_cols * (l.int8_activations ? 1 : 2);
  return std::max<int64_t>(2 * kTokenBlock,
                           kActivationBudget / bytes_per_token / (2 * kTokenBlock) * (2 * kTokenBlock));
}

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Every tile 16 rows of 64 bytes.
void configure_tiles() {
  TileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.colsb[i] = 64;
    c.rows[i] = 16;
  }
  _tile_loadconfig(&c);
}

// One group's span as the AMX path closes it. 4-bit tiles hold the weights
// less their zero points (nibble - zero, within int8), so each token's exact
// sum needs no term of its own activations: with L columns in the span,
//   S = 256 * sum((h+128)(w-z)) + sum(l (w-z)) - 32768 * (sum(w) - z L),
// the same integer the VNNI kernels form as their S (int_linear_groups.h).
struct SpanClose {
  __m512i offsets;  // per row: 32768 * sum(w - z) over the span, wrapping
  __m512 scales;
  __m512i zero_bytes;  // 4 bits: each row's zero point in its four bytes of a tile line
};

SpanClose span_close(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t s, int64_t columns) {
  const size_t at = size_t((g * l.n_spans + s) * kRowGroup);
  SpanClose c{_mm512_loadu_si512(t.offsets + at), _mm512_loadu_ps(t.scales + at), _mm512_setzero_si512()};
  if (t.zeros) {
    const __m512i zeros = _mm512_loadu_si512(t.zeros + at);
    c.offsets = _mm512_sub_epi32(c.offsets, _mm512_mullo_epi32(zeros, _mm512_set1_epi32(int32_t(32768 * columns))));
    c.zero_bytes = _mm512_mullo_epi32(zeros, _mm512_set1_epi32(0x01010101));
  }
  return c;
}

// A 4-bit block (eight lines of paired nibbles) as the 1 KiB int8 B tile of
// the nibbles less each row's zero point.
void unpack_block(const uint8_t* block, __m512i zero_bytes, uint8_t* tile) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int q = 0; q < 8; ++q) {
    const __m512i line = _mm512_load_si512(block + q * 64);
    _mm512_store_si512(tile + q * 64, _mm512_sub_epi8(_mm512_and_si512(line, nibble), zero_bytes));
    _mm512_store_si512(tile + (q + 8) * 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(line, 4), nibble), zero_bytes));
  }
}

// The B tiles of one group's span: the blocks themselves (8 bits) or their
// unpacked copies in `scratch`.
const uint8_t* span_tiles(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int64_t c0, int64_t n,
                          __m512i zero_bytes, uint8_t* scratch) {
  const uint8_t* first = t.w + (size_t(g) * size_t(l.chunks) + size_t(c0)) * l.block_bytes;
  if (l.bits == 8) return first;
  for (int64_t j = 0; j < n; ++j) {
    unpack_block(first + size_t(j) * l.block_bytes, zero_bytes, scratch + size_t(j) * kTileBytes);
  }
  return scratch;
}

// Closes span s of groups [g, g + ng) for tokens [tb, tb + 16) from the
// stored accumulators c[2 gi] (h) and c[2 gi + 1] (l): the VNNI kernels'
// rounding (a16_span_close) from the same integer S.
void close_a16_span(const IntGroupLayout& l, const IntGroupTask& t, const int32_t (*c)[256], const SpanClose* close,
                    int64_t g, int ng, int64_t s, int64_t tb) {
  const int64_t tokens = std::min<int64_t>(kTokenBlock, t.n_tokens - tb);
  const bool last = s + 1 == l.n_spans;
  for (int gi = 0; gi < ng; ++gi) {
    const __mmask16 valid = row_mask(t.rows - (g + gi) * kRowGroup);
    for (int64_t k = 0; k < tokens; ++k) {
      float* y = t.y + (tb + k) * t.y_stride + (g + gi) * kRowGroup;
      const __m512 prev = s == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(valid, y);
      const __m512i hi = _mm512_load_si512(c[2 * gi] + k * 16), lo = _mm512_load_si512(c[2 * gi + 1] + k * 16);
      const __m512i sum = _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo), close[gi].offsets);
      __m512 acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), close[gi].scales, prev);
      if (last) acc = _mm512_mul_ps(acc, _mm512_set1_ps(t.x_scales[tb + k]));
      _mm512_mask_storeu_ps(y, valid, acc);
    }
  }
}

// Span s of groups g and g + 1 (when ng is 2) for tokens [t0, t1).
void a16_span_pass(const IntGroupLayout& l, const IntGroupTask& t, int64_t g, int ng, int64_t s, int64_t t0, int64_t t1) {
  alignas(64) uint8_t scratch[2][kMaxSpanChunks * kTileBytes];
  alignas(64) int32_t c[4][256];
  const int64_t stride = l.padded_cols, span_chunks = l.span / kGroupChunk;
  const int64_t c0 = s * span_chunks, n = std::min(l.chunks, c0 + span_chunks) - c0;
  SpanClose close[2];
  for (int gi = 0; gi < ng; ++gi) close[gi] = span_close(l, t, g + gi, s, n * kGroupChunk);
  const uint8_t* b0 = span_tiles(l, t, g, c0, n, close[0].zero_bytes, scratch[0]);
  const uint8_t* b1 = ng == 2 ? span_tiles(l, t, g + 1, c0, n, close[1].zero_bytes, scratch[1]) : nullptr;
  for (int64_t tb = t0; tb < t1; tb += kTokenBlock) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = tb * stride + (c0 + j) * kGroupChunk;
      _tile_loadd(4, t.x_hi + at, stride);
      _tile_loadd(5, t.x_lo + at, stride);
      _tile_loadd(6, b0 + size_t(j) * kTileBytes, 64);
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 5, 6);
      if (b1) {
        _tile_loadd(7, b1 + size_t(j) * kTileBytes, 64);
        _tile_dpbusd(2, 4, 7);
        _tile_dpbusd(3, 5, 7);
      }
    }
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    if (b1) {
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
    }
    close_a16_span(l, t, c, close, g, ng, s, tb);
  }
}

// Where every token's activations fit in L2, each group's weights are read
// once and all tokens pass over them. Otherwise spans go outermost: one
// span's activations (and the running sums in y) stay in L2 while every
// group's weights for that span stream past, in passes of as many tokens as
// fit.
void amx_a16(const IntGroupLayout& l, const IntGroupTask& t) {
  configure_tiles();
  const int64_t activation_bytes = 2 * l.padded_cols;
  if (t.n_tokens * activation_bytes <= kActivationBudget) {
    for (int64_t g = 0; g < t.groups; g += 2) {
      const int ng = int(std::min<int64_t>(2, t.groups - g));
      for (int64_t s = 0; s < l.n_spans; ++s) a16_span_pass(l, t, g, ng, s, 0, t.n_tokens);
    }
  } else {
    const int64_t per_token = 2 * l.span + 4 * t.groups * kRowGroup;
    const int64_t pass = std::max<int64_t>(kTokenBlock, kSpanPassBudget / per_token / kTokenBlock * kTokenBlock);
    for (int64_t t0 = 0; t0 < t.n_tokens; t0 += pass) {
      const int64_t t1 = std::min(t.n_tokens, t0 + pass);
      for (int64_t s = 0; s < l.n_spans; ++s) {
        for (int64_t g = 0; g < t.groups; g += 2) a16_span_pass(l, t, g, int(std::min<int64_t>(2, t.groups - g)), s, t0, t1);
      }
    }
  }
  _tile_release();
}

// c[2 gi + bi] holds groups g + gi against tokens tb + 16 bi.
void close_a8_rows(const IntGroupTask& t, const int32_t (*c)[256], int64_t g, int ng, int64_t tb, int nb) {
  for (int gi = 0; gi < ng; ++gi) {
    const __mmask16 valid = row_mask(t.rows - (g + gi) * kRowGroup);
    for (int bi = 0; bi < nb; ++bi) {
      const int64_t first = tb + bi * kTokenBlock, tokens = std::min<int64_t>(kTokenBlock, t.n_tokens - first);
      for (int64_t k = 0; k < tokens; ++k) {
        float* y = t.y + (first + k) * t.y_stride + (g + gi) * kRowGroup;
        _mm512_mask_storeu_ps(
            y, valid, a8_row_result(_mm512_load_si512(c[2 * gi + bi] + k * 16), t, g + gi, t.x_scales[first + k]));
      }
    }
  }
}

void amx_a8(const IntGroupLayout& l, const IntGroupTask& t) {
  configure_tiles();
  alignas(64) int32_t c[4][256];
  const int64_t stride = l.padded_cols, pass = tokens_per_pass(l);
  const size_t group_bytes = size_t(l.chunks) * l.block_bytes;
  for (int64_t t0 = 0; t0 < t.n_tokens; t0 += pass) {
    const int64_t t1 = std::min(t.n_tokens, t0 + pass);
    for (int64_t g = 0; g < t.groups; g += 2) {
      const int ng = int(std::min<int64_t>(2, t.groups - g));
      const uint8_t* w0 = t.w + size_t(g) * group_bytes;
      for (int64_t tb = t0; tb < t1; tb += 2 * kTokenBlock) {
        const int nb = tb + kTokenBlock < t.n_tokens ? 2 : 1;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t j = 0; j < l.chunks; ++j) {
          const uint8_t* x = t.x8 + tb * stride + j * kGroupChunk;
          _tile_loadd(4, x, stride);
          _tile_loadd(6, w0 + size_t(j) * kTileBytes, 64);
          _tile_dpbusd(0, 4, 6);
          if (nb == 2) {
            _tile_loadd(5, x + kTokenBlock * stride, stride);
            _tile_dpbusd(1, 5, 6);
          }
          if (ng == 2) {
            _tile_loadd(7, w0 + group_bytes + size_t(j) * kTileBytes, 64);
            _tile_dpbusd(2, 4, 7);
            if (nb == 2) _tile_dpbusd(3, 5, 7);
          }
        }
        _tile_stored(0, c[0], 64);
        _tile_stored(1, c[1], 64);
        _tile_stored(2, c[2], 64);
        _tile_stored(3, c[3], 64);
        close_a8_rows(t, c, g, ng, tb, nb);
      }
    }
  }
  _tile_release();
}

}  // namespace

IntGroupKernels amx_group_kernels() {
  IntGroupKernels k = avx512_group_kernels();
  k.amx_a16 = amx_a16;
  k.amx_a8 = amx_a8;
  return k;
}

}  // namespace tessera::cpu
