#pragma once
// MXFP4 (gpt-oss's experts) against Q8_0 activations, written once over the
// instruction that forms a block's 32-bit lane sums (AVX2: two multiply-
// adds; AVX-512 VL + VNNI: one dot product). Each block's integer sum is
// exact, so the instruction does not change it; the float work is the
// scalar kernel's, (activation scale * half the block's scale) * sum added
// block by block, so every kernel here gives its bits. The nibbles are
// looked up as signed bytes and their signs moved onto the activations (no
// pair can saturate: 2 * 12 * 127). Several blocks' or tokens' lane sums
// are reduced together, which costs far less than one reduction each. For
// vec_dot_avx2.cc and vec_dot_avx512.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot.h"

namespace tessera::cpu {
namespace {

// The eight 32-bit lane sums of unsigned bytes `u` times signed bytes `s`.
using LaneSums = __m256i (*)(__m256i u, __m256i s);

struct Mxfp4Weights {
  __m256i magnitudes, values;  // |value| as unsigned bytes; the values, whose signs go onto the activations
};

inline Mxfp4Weights mxfp4_weights(const BlockMXFP4& x) {
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  const __m256i q = _mm256_shuffle_epi8(table, unpack_nibbles(x.qs));  // values 0-15, then 16-31
  return {_mm256_sign_epi8(q, q), q};
}

template <LaneSums lane_sums>
__m256i mxfp4_lanes(const Mxfp4Weights& w, const int8_t* y) {
  return lane_sums(w.magnitudes, _mm256_sign_epi8(load32(y), w.values));
}

// Whole sums of four lane vectors, as halves to add: [a, b, c, d | a, b, c,
// d]. Interleaving adds, not horizontal adds: a block's result waits on
// this chain, and the shorter it is the more blocks overlap.
inline __m256i four_halves(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));  // [a b a b]
  const __m256i cd = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
}

inline __m128 four_sums(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i h = four_halves(a, b, c, d);
  return _mm_cvtepi32_ps(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

// Whole sums of eight lane vectors, in order.
inline __m256 eight_sums(const __m256i* l) {
  const __m256i g0 = four_halves(l[0], l[1], l[2], l[3]), g1 = four_halves(l[4], l[5], l[6], l[7]);
  const __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
  return _mm256_cvtepi32_ps(sums);
}

// e8m0_half of eight exponent bytes.
inline __m256 e8m0_halves(__m256i e) {
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
}

inline float mxfp4_scale(const BlockQ8_0& y, const BlockMXFP4& x) { return fp16(y.d) * e8m0_half(x.e); }

template <LaneSums lane_sums>
float dot_mxfp4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const int64_t blocks = n / kQK;
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) {
    __m256i lanes[8];
    for (int i = 0; i < 8; ++i) lanes[i] = mxfp4_lanes<lane_sums>(mxfp4_weights(x[b + i]), y[b + i].qs);
    const __m128i dy = _mm_setr_epi16(short(y[b].d), short(y[b + 1].d), short(y[b + 2].d), short(y[b + 3].d), short(y[b + 4].d),
                                      short(y[b + 5].d), short(y[b + 6].d), short(y[b + 7].d));
    const __m256i e = _mm256_setr_epi32(x[b].e, x[b + 1].e, x[b + 2].e, x[b + 3].e, x[b + 4].e, x[b + 5].e, x[b + 6].e, x[b + 7].e);
    alignas(32) float terms[8];
    _mm256_store_ps(terms, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtph_ps(dy), e8m0_halves(e)), eight_sums(lanes)));
    for (const float t : terms) sum += t;
  }
  for (; b < blocks; ++b) {
    const __m256i zero = _mm256_setzero_si256();
    const float whole = _mm_cvtss_f32(four_sums(mxfp4_lanes<lane_sums>(mxfp4_weights(x[b]), y[b].qs), zero, zero, zero));
    sum += mxfp4_scale(y[b], x[b]) * whole;
  }
  return sum;
}

// Four tokens against one row: the weights decoded once per block, the
// tokens' sums reduced together, each token's running sum in its own lane.
template <LaneSums lane_sums>
void dot4_mxfp4(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y[4];
  for (int j = 0; j < 4; ++j) y[j] = static_cast<const BlockQ8_0*>(a[j]);
  __m128 sums = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const Mxfp4Weights weights = mxfp4_weights(x[b]);
    const __m128 whole = four_sums(mxfp4_lanes<lane_sums>(weights, y[0][b].qs), mxfp4_lanes<lane_sums>(weights, y[1][b].qs),
                                   mxfp4_lanes<lane_sums>(weights, y[2][b].qs), mxfp4_lanes<lane_sums>(weights, y[3][b].qs));
    const __m128 dy = halves(y[0][b].d, y[1][b].d, y[2][b].d, y[3][b].d);
    sums = _mm_add_ps(sums, _mm_mul_ps(_mm_mul_ps(dy, _mm_set1_ps(e8m0_half(x[b].e))), whole));
  }
  _mm_storeu_ps(out, sums);
}

// Eight tokens against one row, their block scales read from the
// block-major table (VecDot8Fn).
template <LaneSums lane_sums>
void dot8_mxfp4(int64_t n, const void* w, const void* const* a, const float* dy, const float*, float* out) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y[8];
  for (int j = 0; j < 8; ++j) y[j] = static_cast<const BlockQ8_0*>(a[j]);
  __m256 sums = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const Mxfp4Weights weights = mxfp4_weights(x[b]);
    __m256i lanes[8];
    for (int j = 0; j < 8; ++j) lanes[j] = mxfp4_lanes<lane_sums>(weights, y[j][b].qs);
    const __m256 scales = _mm256_mul_ps(_mm256_loadu_ps(dy + b * 8), _mm256_set1_ps(e8m0_half(x[b].e)));
    sums = _mm256_add_ps(sums, _mm256_mul_ps(scales, eight_sums(lanes)));
  }
  _mm256_storeu_ps(out, sums);
}

// kDecodeRows rows `stride` bytes apart against kTokens tokens: each block
// of the rows decoded once for every token, the rows' sums reduced
// together, each row's running sum in its own lane. The token count is a
// template argument so that the running sums stay in registers: kept in an
// array indexed at run time they went through memory, and each block's add
// waited on a store.
template <LaneSums lane_sums, int kTokens>
void mxfp4_rows(int64_t n, const void* w, size_t stride, const void* const* a, float* out) {
  static_assert(kDecodeRows == 4, "one lane of a 128-bit vector per row");
  const BlockMXFP4* x[kDecodeRows];
  for (int r = 0; r < kDecodeRows; ++r) x[r] = reinterpret_cast<const BlockMXFP4*>(static_cast<const uint8_t*>(w) + r * stride);
  const BlockQ8_0* y[kTokens];
  for (int t = 0; t < kTokens; ++t) y[t] = static_cast<const BlockQ8_0*>(a[t]);
  __m128 sums[kTokens];
  for (__m128& s : sums) s = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const Mxfp4Weights rows[4] = {mxfp4_weights(x[0][b]), mxfp4_weights(x[1][b]), mxfp4_weights(x[2][b]), mxfp4_weights(x[3][b])};
    const __m128 dx = _mm256_castps256_ps128(e8m0_halves(_mm256_setr_epi32(x[0][b].e, x[1][b].e, x[2][b].e, x[3][b].e, 0, 0, 0, 0)));
    for (int t = 0; t < kTokens; ++t) {
      const __m256i ys = load32(y[t][b].qs);
      auto lanes = [&](const Mxfp4Weights& q) { return lane_sums(q.magnitudes, _mm256_sign_epi8(ys, q.values)); };
      const __m128 whole = four_sums(lanes(rows[0]), lanes(rows[1]), lanes(rows[2]), lanes(rows[3]));
      sums[t] = _mm_add_ps(sums[t], _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(fp16(y[t][b].d)), dx), whole));
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm_storeu_ps(out + t * kDecodeRows, sums[t]);
}

// VecDotRowsFn: 1 to kMaxRowTokens tokens.
template <LaneSums lane_sums>
void dot_mxfp4_rows(int64_t n, const void* w, size_t stride, const void* const* a, int n_tokens, float* out) {
  static_assert(kMaxRowTokens == 8, "a case per token count");
  switch (n_tokens) {
    case 1: mxfp4_rows<lane_sums, 1>(n, w, stride, a, out); return;
    case 2: mxfp4_rows<lane_sums, 2>(n, w, stride, a, out); return;
    case 3: mxfp4_rows<lane_sums, 3>(n, w, stride, a, out); return;
    case 4: mxfp4_rows<lane_sums, 4>(n, w, stride, a, out); return;
    case 5: mxfp4_rows<lane_sums, 5>(n, w, stride, a, out); return;
    case 6: mxfp4_rows<lane_sums, 6>(n, w, stride, a, out); return;
    case 7: mxfp4_rows<lane_sums, 7>(n, w, stride, a, out); return;
    default: mxfp4_rows<lane_sums, 8>(n, w, stride, a, out); return;
  }
}

template <LaneSums lane_sums>
void set_mxfp4_kernels(VecDotKernel& k) {
  k.fn = dot_mxfp4<lane_sums>;
  k.fn_rows = dot_mxfp4_rows<lane_sums>;
  k.fn4 = dot4_mxfp4<lane_sums>;
  k.fn8 = dot8_mxfp4<lane_sums>;
}

}  // namespace
}  // namespace tessera::cpu
