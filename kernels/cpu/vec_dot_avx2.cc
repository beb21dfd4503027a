// AVX2 dot products (this file is built with -mavx2 -mfma -mf16c and only
// called after run-time detection). Integer products use the
// unsigned-by-signed byte multiply, with signs moved onto the activations.
#include <immintrin.h>

#include <cstring>

#include "engine/tensor/half.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/vec_dot.h"

namespace tessera::cpu {
namespace {

// Hardware f16 conversion (F16C); exact, like the portable one.
float fp16(uint16_t h) { return _cvtsh_ss(h); }

float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  lo = _mm_add_ps(lo, _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high.
__m256i unpack_nibbles(const uint8_t* p) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// 32 bits -> 32 bytes, 0xFF where the bit is set.
__m256i expand_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i byte_of_bit = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), byte_of_bit);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// Sum of products of unsigned bytes `u` and signed bytes `s`, as 8 floats.
__m256 madd_us(__m256i u, __m256i s) {
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// Sum of products of two signed byte vectors.
__m256 madd_ss(__m256i x, __m256i y) { return madd_us(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)); }

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

float dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float dot_f16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    const __m256 yv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    acc = _mm256_fmadd_ps(xv, yv, acc);
  }
  float sum = hsum(acc);
  for (; i < n; ++i) sum += fp16(x[i]) * fp16(y[i]);
  return sum;
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    const __m256i qx = _mm256_sub_epi8(unpack_nibbles(x[b].qs), _mm256_set1_epi8(8));
    acc = _mm256_fmadd_ps(d, madd_ss(qx, load32(y[b].qs)), acc);
  }
  return hsum(acc);
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    mins += fp16(x[b].m) * fp16(y[b].s);
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    acc = _mm256_fmadd_ps(d, madd_us(unpack_nibbles(x[b].qs), load32(y[b].qs)), acc);
  }
  return hsum(acc) + mins;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    // nibble | 0xF0 reads as nibble - 16 where the fifth bit is clear.
    const __m256i high = _mm256_andnot_si256(expand_bits(x[b].qh), _mm256_set1_epi8(char(0xf0)));
    const __m256i qx = _mm256_or_si256(unpack_nibbles(x[b].qs), high);
    acc = _mm256_fmadd_ps(d, madd_ss(qx, load32(y[b].qs)), acc);
  }
  return hsum(acc);
}

// Weight values of one 32-element block as signed bytes.
__m256i q4_0_values(const BlockQ4_0& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
__m256i q5_0_values(const BlockQ5_0& b) {
  // nibble | 0xF0 reads as nibble - 16 where the fifth bit is clear.
  const __m256i high = _mm256_andnot_si256(expand_bits(b.qh), _mm256_set1_epi8(char(0xf0)));
  return _mm256_or_si256(unpack_nibbles(b.qs), high);
}
__m256i q8_0_values(const BlockQ8_0& b) { return load32(b.qs); }

// Signed-weight formats against Q8_0 activations, four rows at a time.
template <class Block, __m256i (*values)(const Block&)>
void dot4_signed(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const Block*>(w);
  const BlockQ8_0* y[4];
  for (int j = 0; j < 4; ++j) y[j] = static_cast<const BlockQ8_0*>(a[j]);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float dx = fp16(x[b].d);
    const __m256i qx = values(x[b]);
    const __m256i ax = _mm256_sign_epi8(qx, qx);
    for (int j = 0; j < 4; ++j) {
      const __m256 d = _mm256_set1_ps(dx * fp16(y[j][b].d));
      acc[j] = _mm256_fmadd_ps(d, madd_us(ax, _mm256_sign_epi8(load32(y[j][b].qs), qx)), acc[j]);
    }
  }
  for (int j = 0; j < 4; ++j) out[j] = hsum(acc[j]);
}

void dot4_q4_1(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y[4];
  for (int j = 0; j < 4; ++j) y[j] = static_cast<const BlockQ8_1*>(a[j]);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  float mins[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float dx = fp16(x[b].d), mx = fp16(x[b].m);
    const __m256i qx = unpack_nibbles(x[b].qs);
    for (int j = 0; j < 4; ++j) {
      mins[j] += mx * fp16(y[j][b].s);
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16(y[j][b].d)), madd_us(qx, load32(y[j][b].qs)), acc[j]);
    }
  }
  for (int j = 0; j < 4; ++j) out[j] = hsum(acc[j]) + mins[j];
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    acc = _mm256_fmadd_ps(d, madd_ss(load32(x[b].qs), load32(y[b].qs)), acc);
  }
  return hsum(acc);
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_mins = _mm_setzero_ps();  // four lanes, each two sub-blocks' minimum terms
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t scales[8], mins[8];
    unpack_q4k_scales(x[b].scales, scales, mins);
    // Pairs of 16-element activation sums, weighted by the sub-block minimums.
    const __m128i bsums = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].bsums + 8)));
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins)));
    const __m128i min_products = _mm_madd_epi16(mins16, bsums);
    const float dmin = -y[b].d * fp16(x[b].dmin);
    acc_mins = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(min_products), acc_mins);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load32(x[b].qs + 32 * j);
      const __m256i lo = _mm256_and_si256(bits, low_mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_mask);
      const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(y[b].qs + 64 * j)),
                                             _mm256_set1_epi16(scales[2 * j]));
      const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(y[b].qs + 64 * j + 32)),
                                             _mm256_set1_epi16(scales[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p_lo, p_hi));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * fp16(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  acc_mins = _mm_add_ps(acc_mins, _mm_movehl_ps(acc_mins, acc_mins));
  acc_mins = _mm_add_ss(acc_mins, _mm_movehdup_ps(acc_mins));
  return hsum(acc) + _mm_cvtss_f32(acc_mins);
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i two_bits = _mm256_set1_epi8(0x03);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Stored values are q + 32: multiply them as they are and take off
    // 32 * scale * (activation sum) per pair of 16-element groups.
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales)));
    const __m256i correction = _mm256_slli_epi32(_mm256_madd_epi16(load32(y[b].bsums), scales16), 5);
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const __m256i qh = load32(x[b].qh + 32 * half);
      const __m256i ql_bytes[2] = {load32(ql), load32(ql + 32)};
      for (int c = 0; c < 4; ++c) {
        const __m256i low = c < 2 ? _mm256_and_si256(ql_bytes[c], low_mask)
                                  : _mm256_and_si256(_mm256_srli_epi16(ql_bytes[c - 2], 4), low_mask);
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), two_bits), 4);
        const __m256i q = _mm256_or_si256(low, high);
        const __m256i pairs = _mm256_maddubs_epi16(q, load32(y[b].qs + 128 * half + 32 * c));
        const int group = half * 8 + c * 2;
        const __m256i scale = _mm256_set_m128i(_mm_set1_epi16(x[b].scales[group + 1]), _mm_set1_epi16(x[b].scales[group]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pairs, scale));
      }
    }
    sumi = _mm256_sub_epi32(sumi, correction);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y[b].d * fp16(x[b].d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

}  // namespace

VecDotKernel avx2_vec_dot(DType weight_type) {
  VecDotKernel k = pick_vec_dot(weight_type, {{DType::kF32, dot_f32}, {DType::kF16, dot_f16}, {DType::kQ4_0, dot_q4_0},
                                              {DType::kQ4_1, dot_q4_1}, {DType::kQ5_0, dot_q5_0}, {DType::kQ8_0, dot_q8_0},
                                              {DType::kQ4_K, dot_q4_k}, {DType::kQ6_K, dot_q6_k}});
  switch (weight_type) {
    case DType::kQ4_0: k.fn4 = dot4_signed<BlockQ4_0, q4_0_values>; break;
    case DType::kQ4_1: k.fn4 = dot4_q4_1; break;
    case DType::kQ5_0: k.fn4 = dot4_signed<BlockQ5_0, q5_0_values>; break;
    case DType::kQ8_0: k.fn4 = dot4_signed<BlockQ8_0, q8_0_values>; break;
    default: break;
  }
  return k;
}

}  // namespace tessera::cpu
