// Integer-linear kernels for AVX2: int16 products with vpmaddwd, int8 ones
// with vpmaddubsw on |w| and sign(x, w) (exact: no pair exceeds 2 * 127 *
// 127). One template per kernel serves every tile of tokens, row by row.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/linear/int_linear.h"
#include "kernels/cpu/linear/weight_prefetch.h"

namespace tessera::cpu {
namespace {

float reduce_add(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

int32_t reduce_add(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

__m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

float reduce_max(__m256 v) {
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
}

// x * inv for eight values, rounded to the nearest integer (ties to even,
// as lrintf rounds in the default mode).
__m256i scaled_ints(const float* x, __m256 inv) { return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), inv)); }

// The portable rounding (quantize_int_row), eight lanes at a time: the
// same products, vcvtps2dq rounding as lrintf does, and the maximum
// ignoring NaNs as std::max does. Scalar, its lrintf calls took a fifth of
// a one-token product's time. Packing never saturates: every value is
// within +-32767 (int16) or +-127 (int8).
void quantize_int_row_avx2(const IntRowQuantizeArgs& a) {
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vmax = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= a.cols; c += 8) vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(a.x + c), magnitude), vmax);
  float amax = reduce_max(vmax);
  for (; c < a.cols; ++c) amax = std::max(amax, std::fabs(a.x[c]));
  // vpackssdw / vpacksswb work within 128-bit halves; this puts them back in order.
  const __m256i in_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  if (a.q16) {
    const float inv = amax > 0.0f ? 32767.0f / amax : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (c = 0; c + 16 <= a.cols; c += 16) {
      const __m256i packed = _mm256_packs_epi32(scaled_ints(a.x + c, vinv), scaled_ints(a.x + c + 8, vinv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.q16 + c), _mm256_permute4x64_epi64(packed, 0xD8));
    }
    for (; c < a.cols; ++c) a.q16[c] = int16_t(std::lrintf(a.x[c] * inv));
    *a.scale16 = amax / 32767.0f;
  }
  if (a.q8) {
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    // q + 128 as a byte is q with its top bit flipped.
    const __m256i flip = _mm256_set1_epi8(a.offset8 ? char(0x80) : 0);
    for (c = 0; c + 32 <= a.cols; c += 32) {
      const __m256i lo = _mm256_packs_epi32(scaled_ints(a.x + c, vinv), scaled_ints(a.x + c + 8, vinv));
      const __m256i hi = _mm256_packs_epi32(scaled_ints(a.x + c + 16, vinv), scaled_ints(a.x + c + 24, vinv));
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(lo, hi), in_order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(a.q8 + c), _mm256_xor_si256(bytes, flip));
    }
    for (; c < a.cols; ++c) {
      const long v = std::lrintf(a.x[c] * inv);
      a.q8[c] = a.offset8 ? int8_t(uint8_t(v + 128)) : int8_t(v);
    }
    *a.scale8 = amax / 127.0f;
  }
}

// The frame both 16-bit kernels share, for rows r0 .. r0 + R - 1 of the
// task (row_step apart in the weight): per span, `products` adds the span's int32 products into one
// accumulator per (row, token); the span then joins that pair's f32 sums
// with the row's scale. Several rows at once let one activation load serve
// every row and keep R independent sums in flight; each (row, token) sees
// the same lane sums in the same order for every R, so R never changes a bit.
template <int T, int R, class Products>
void a16_frame(const IntRowLayout& l, const IntRowTask& t, int r0, const Products& products) {
  __m256 accf[R][T];
  for (int i = 0; i < R; ++i) {
    for (int k = 0; k < T; ++k) accf[i][k] = _mm256_setzero_ps();
  }
  for (int64_t s = 0; s < l.n_spans; ++s) {
    __m256i acci[R][T];
    for (int i = 0; i < R; ++i) {
      for (int k = 0; k < T; ++k) acci[i][k] = _mm256_setzero_si256();
    }
    products(s * l.span, std::min((s + 1) * l.span, l.padded_cols), s, acci);
    for (int i = 0; i < R; ++i) {
      const __m256 scale = _mm256_set1_ps(t.scales[(r0 + i) * t.row_step * l.n_spans + s]);
      for (int k = 0; k < T; ++k) accf[i][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acci[i][k]), scale, accf[i][k]);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int k = 0; k < T; ++k) t.y[k * t.y_stride + (r0 + i) * t.row_step] = reduce_add(accf[i][k]) * t.x_scales[k];
  }
}

// 16 columns of R rows against T tokens.
template <int T, int R>
inline void a16_w8_step(const uint8_t* const (&w)[R], const int16_t* x, int64_t x_stride, int64_t c,
                        __m256i (&acci)[R][T]) {
  __m256i xv[T];
  for (int k = 0; k < T; ++k) xv[k] = load(x + k * x_stride + c);
  for (int i = 0; i < R; ++i) {
    const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + c)));
    for (int k = 0; k < T; ++k) acci[i][k] = _mm256_add_epi32(acci[i][k], _mm256_madd_epi16(wv, xv[k]));
  }
}

// Per-channel spans are whole 64-column chunks (padded_cols and the
// 4096-column span both are multiples of 64): the loop takes 64 columns a
// turn with one prefetch per row; grouped spans end in 16-column steps.
template <int T, int R>
void a16_w8_rows(const IntRowLayout& l, const IntRowTask& t, int r0) {
  const uint8_t* w[R];
  for (int i = 0; i < R; ++i) w[i] = t.w + size_t(r0 + i) * t.w_stride;
  const auto* x = static_cast<const int16_t*>(t.x);
  a16_frame<T, R>(l, t, r0, [&](int64_t begin, int64_t end, int64_t, __m256i (&acci)[R][T]) {
    int64_t c = begin;
    for (; c + 64 <= end; c += 64) {
      for (int i = 0; i < R; ++i) prefetch_weights_ahead(w[i] + c);
      for (int part = 0; part < 64; part += 16) a16_w8_step<T, R>(w, x, t.x_stride, c + part, acci);
    }
    for (; c < end; c += 16) a16_w8_step<T, R>(w, x, t.x_stride, c, acci);
  });
}

// A 64-column chunk is 32 bytes: bytes 0..15 hold columns 0..15 (low
// nibbles) and 32..47 (high), bytes 16..31 columns 16..31 and 48..63.
// 32 columns of R rows, the low (columns c..c+31 of the chunk) or the high
// nibbles, each widened to 16 bits and less its row's zero point (a signed
// value within ±15), so the products need no correction afterwards.
template <int T, int R>
inline void a16_w4_half_chunk(const uint8_t* const (&w)[R], const __m256i (&zero)[R], int64_t chunk_byte, const int16_t* x,
                              int64_t x_stride, int64_t c, bool high, __m256i (&acci)[R][T]) {
  const __m256i low_mask = _mm256_set1_epi16(0x0F);
  for (int half = 0; half < 2; ++half) {
    for (int i = 0; i < R; ++i) {
      const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + chunk_byte + 16 * half)));
      const __m256i u = high ? _mm256_srli_epi16(raw, 4) : _mm256_and_si256(raw, low_mask);
      const __m256i q = _mm256_sub_epi16(u, zero[i]);
      for (int k = 0; k < T; ++k) {
        acci[i][k] = _mm256_add_epi32(acci[i][k], _mm256_madd_epi16(q, load(x + k * x_stride + c + 16 * half)));
      }
    }
  }
}

// A whole 64-column chunk of R rows: each 16 bytes are widened once and
// give 16 columns of the low half (their low nibbles) and the 16 columns 32
// further on (their high nibbles). The int32 lane sums are exact, so the
// order they are added in changes no bit.
template <int T, int R>
inline void a16_w4_chunk(const uint8_t* const (&w)[R], const __m256i (&zero)[R], int64_t chunk_byte, const int16_t* x,
                         int64_t x_stride, int64_t c, __m256i (&acci)[R][T]) {
  const __m256i low_mask = _mm256_set1_epi16(0x0F);
  for (int half = 0; half < 2; ++half) {
    for (int i = 0; i < R; ++i) {
      const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + chunk_byte + 16 * half)));
      const __m256i low = _mm256_sub_epi16(_mm256_and_si256(raw, low_mask), zero[i]);
      const __m256i high = _mm256_sub_epi16(_mm256_srli_epi16(raw, 4), zero[i]);
      for (int k = 0; k < T; ++k) {
        const int16_t* xk = x + k * x_stride + c + 16 * half;
        acci[i][k] = _mm256_add_epi32(acci[i][k], _mm256_madd_epi16(low, load(xk)));
        acci[i][k] = _mm256_add_epi32(acci[i][k], _mm256_madd_epi16(high, load(xk + 32)));
      }
    }
  }
}

// Spans (groups) are multiples of 32 columns: a turn takes 32. Widening
// the nibbles 16 at a time in the load measured faster from memory than
// loading a chunk whole and widening its halves.
template <int T, int R>
void a16_w4_rows(const IntRowLayout& l, const IntRowTask& t, int r0) {
  const uint8_t* w[R];
  for (int i = 0; i < R; ++i) w[i] = t.w + size_t(r0 + i) * t.w_stride;
  const auto* x = static_cast<const int16_t*>(t.x);
  a16_frame<T, R>(l, t, r0, [&](int64_t begin, int64_t end, int64_t s, __m256i (&acci)[R][T]) {
    __m256i zero[R];
    for (int i = 0; i < R; ++i) zero[i] = _mm256_set1_epi16(t.zeros[(r0 + i) * t.row_step * l.n_spans + s]);
    int64_t c = begin;
    for (; c % 64 == 0 && c + 64 <= end; c += 64) {  // whole chunks, low then high nibbles
      const int64_t chunk_byte = c / 2;
      if (c % 128 == 0) {
        for (int i = 0; i < R; ++i) prefetch_weights_ahead(w[i] + chunk_byte);
      }
      a16_w4_chunk<T, R>(w, zero, chunk_byte, x, t.x_stride, c, acci);
    }
    for (; c < end; c += 32) {  // a 32-column span: half a chunk
      const int64_t chunk_byte = (c / 64) * 32;
      if (c % 128 == 0) {
        for (int i = 0; i < R; ++i) prefetch_weights_ahead(w[i] + chunk_byte);
      }
      a16_w4_half_chunk<T, R>(w, zero, chunk_byte, x, t.x_stride, c, c % 64 != 0, acci);
    }
  });
}

// R rows against T tokens in int8: one exact integer sum per (row, token)
// over the whole row, scaled once.
template <int T, int R>
void a8_w8_rows(const IntRowLayout& l, const IntRowTask& t, int r0) {
  const uint8_t* w[R];
  for (int i = 0; i < R; ++i) w[i] = t.w + size_t(r0 + i) * t.w_stride;
  const auto* x = static_cast<const int8_t*>(t.x);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[R][T];
  for (int i = 0; i < R; ++i) {
    for (int k = 0; k < T; ++k) acc[i][k] = _mm256_setzero_si256();
  }
  for (int64_t c = 0; c < l.padded_cols; c += 32) {
    if (c % 64 == 0) {
      for (int i = 0; i < R; ++i) prefetch_weights_ahead(w[i] + c);
    }
    for (int i = 0; i < R; ++i) {
      const __m256i wv = load(w[i] + c);
      const __m256i w_abs = _mm256_sign_epi8(wv, wv);
      for (int k = 0; k < T; ++k) {
        const __m256i x_signed = _mm256_sign_epi8(load(x + k * t.x_stride + c), wv);
        acc[i][k] = _mm256_add_epi32(acc[i][k], _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, x_signed), ones));
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    const int64_t row = (r0 + i) * t.row_step;
    for (int k = 0; k < T; ++k) {
      t.y[k * t.y_stride + row] = float(reduce_add(acc[i][k])) * (t.x_scales[k] * t.scales[row * l.n_spans]);
    }
  }
}

// Rows taken together per token count, where the registers hold them (R
// accumulators and R weight vectors per token, plus the activations). The
// 4-bit kernels are bound by their arithmetic and gain from independent
// rows; an 8-bit row alone already reads as fast as memory serves it, and
// several interleaved rows of one stretch of memory slow the prefetchers.
template <int T>
constexpr int kW4Rows = T == 1 ? 4 : T == 2 ? 2 : 1;
template <int T>
constexpr int kW8Rows = T == 2 ? 2 : 1;

template <int T, int R, template <int, int> class Rows>
void run_rows(const IntRowLayout& l, const IntRowTask& t) {
  // Rows spread over the weight are separate streams from memory: read
  // side by side, each keeps its own prefetch going.
  if (t.row_step > 1 && t.n_rows == kIntRowTile && kIntRowTile * T <= 8) return Rows<T, kIntRowTile>::run(l, t, 0);
  int r = 0;
  if constexpr (R > 1) {
    for (; r + R <= t.n_rows; r += R) Rows<T, R>::run(l, t, r);
  }
  for (; r < t.n_rows; ++r) Rows<T, 1>::run(l, t, r);
}

template <int T, int R>
struct A16W8Rows {
  static void run(const IntRowLayout& l, const IntRowTask& t, int r0) { a16_w8_rows<T, R>(l, t, r0); }
};
template <int T, int R>
struct A16W4Rows {
  static void run(const IntRowLayout& l, const IntRowTask& t, int r0) { a16_w4_rows<T, R>(l, t, r0); }
};
template <int T>
struct A16W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { run_rows<T, kW8Rows<T>, A16W8Rows>(l, t); }
};
template <int T>
struct A16W4 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { run_rows<T, kW4Rows<T>, A16W4Rows>(l, t); }
};
template <int T, int R>
struct A8W8Rows {
  static void run(const IntRowLayout& l, const IntRowTask& t, int r0) { a8_w8_rows<T, R>(l, t, r0); }
};
template <int T>
struct A8W8 {
  static void run(const IntRowLayout& l, const IntRowTask& t) { run_rows<T, 1, A8W8Rows>(l, t); }
};

template <template <int> class Tile>
void dispatch(const IntRowLayout& l, const IntRowTask& t) {
  switch (t.n_tokens) {
    case 1: return Tile<1>::run(l, t);
    case 2: return Tile<2>::run(l, t);
    case 3: return Tile<3>::run(l, t);
    default: return Tile<4>::run(l, t);
  }
}

}  // namespace

IntLinearKernels avx2_int_kernels() {
  IntLinearKernels k{dispatch<A16W8>, dispatch<A16W4>, dispatch<A8W8>};
  k.spread_rows = true;
  k.quantize_row = quantize_int_row_avx2;
  return k;
}

}  // namespace tessera::cpu
