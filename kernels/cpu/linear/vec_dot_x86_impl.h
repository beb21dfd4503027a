#pragma once
// The x86 quantised dot-product kernels, written once over the instruction
// that multiplies unsigned by signed bytes and sums groups of four into 32-bit
// lanes (AVX2: multiply-add pairs twice; AVX-512: VNNI's one instruction).
// Both form the same lane sums, and the float accumulation order is fixed
// here, so every instantiation gives the same bits. For files compiled with
// at least -mavx2 -mfma -mf16c; everything is internal to each includer.
#include <algorithm>
#include <utility>

#include "kernels/cpu/linear/simd_avx2.h"
#include "kernels/cpu/linear/vec_dot.h"

namespace tessera::cpu {
namespace {

using ByteDot = __m256 (*)(__m256i u, __m256i s);

template <ByteDot byte_dot, class Block, __m256i (*values)(const Block&)>
float dot_signed(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    const __m256i qx = values(x[b]);
    acc = _mm256_fmadd_ps(d, byte_dot(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(load32(y[b].qs), qx)), acc);
  }
  return hsum(acc);
}

template <ByteDot byte_dot, class Block, __m256i (*values)(const Block&)>
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
      acc[j] = _mm256_fmadd_ps(d, byte_dot(ax, _mm256_sign_epi8(load32(y[j][b].qs), qx)), acc[j]);
    }
  }
  for (int j = 0; j < 4; ++j) out[j] = hsum(acc[j]);
}

// fn(b, scales) for each block b of a row's n_blocks, scales[j] being
// dx[b] * dy[b][j] for the eight rows j, each rounded as the scalar product
// rounds. The scales are written out a run of blocks ahead of the products
// that read them: broadcast from memory a scale is a load, where spread from
// a register's lane it was a shuffle taken from the vector units the
// products need (and read back from a vector stored in the same block, it
// waited on store forwarding).
constexpr int64_t kScaleRun = 32;
template <class Block, class Fn>
inline void for_each_block_scaled(const Block* x, const float* dy, int64_t n_blocks, const Fn& fn) {
  alignas(32) float scales[kScaleRun][8];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kScaleRun) {
    const int64_t run = std::min(kScaleRun, n_blocks - b0);
    for (int64_t i = 0; i < run; ++i) {
      _mm256_store_ps(scales[i], _mm256_mul_ps(_mm256_set1_ps(fp16(x[b0 + i].d)), _mm256_loadu_ps(dy + (b0 + i) * 8)));
    }
    for (int64_t i = 0; i < run; ++i) fn(b0 + i, scales[i]);
  }
}

// f.template operator()<J>() for J = 0 .. 7, each J a constant (row
// shuffles take immediates).
template <class F>
inline void for_eight_rows(F&& f) {
  [&]<int... J>(std::integer_sequence<int, J...>) { (f.template operator()<J>(), ...); }(std::make_integer_sequence<int, 8>{});
}

// dot4_signed for eight rows.
template <ByteDot byte_dot, class Block, __m256i (*values)(const Block&)>
void dot8_signed(int64_t n, const void* w, const void* const* a, const float* dy, const float*, float* out) {
  const auto* x = static_cast<const Block*>(w);
  const BlockQ8_0* y[8];
  for (int j = 0; j < 8; ++j) y[j] = static_cast<const BlockQ8_0*>(a[j]);
  __m256 acc[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  for_each_block_scaled(x, dy, n / kQK, [&](int64_t b, const float* scales) {
    const __m256i qx = values(x[b]);
    const __m256i ax = _mm256_sign_epi8(qx, qx);
    for_eight_rows([&]<int J>() {
      acc[J] = _mm256_fmadd_ps(_mm256_broadcast_ss(scales + J), byte_dot(ax, _mm256_sign_epi8(load32(y[J][b].qs), qx)), acc[J]);
    });
  });
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) out[j] = hsum(acc[j]);
}

// Running sums of N Q4_1 dot products: the scaled block sums and the
// minimum terms, added at the end as the one-row kernel adds them.
template <int N>
struct Q4_1Sums {
  __m256 acc[N];
  float mins[N] = {};
  Q4_1Sums() {
    for (__m256& v : acc) v = _mm256_setzero_ps();
  }
  void store(float* out) const {
    for (int i = 0; i < N; ++i) out[i] = hsum(acc[i]) + mins[i];
  }
};

template <ByteDot byte_dot>
float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    mins += fp16(x[b].m) * fp16(y[b].s);
    const __m256 d = _mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d));
    acc = _mm256_fmadd_ps(d, byte_dot(unpack_nibbles(x[b].qs), load32(y[b].qs)), acc);
  }
  return hsum(acc) + mins;
}

template <ByteDot byte_dot>
void dot4_q4_1(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y[4];
  for (int j = 0; j < 4; ++j) y[j] = static_cast<const BlockQ8_1*>(a[j]);
  Q4_1Sums<4> sums;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float dx = fp16(x[b].d), mx = fp16(x[b].m);
    const __m256i qx = unpack_nibbles(x[b].qs);
    for (int j = 0; j < 4; ++j) {
      sums.mins[j] += mx * fp16(y[j][b].s);
      sums.acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16(y[j][b].d)), byte_dot(qx, load32(y[j][b].qs)), sums.acc[j]);
    }
  }
  sums.store(out);
}

// dot4_q4_1 for eight rows; the minimum terms m * s of the eight rows are
// kept in one vector, each lane multiplied and added as the scalar code does.
template <ByteDot byte_dot>
void dot8_q4_1(int64_t n, const void* w, const void* const* a, const float* dy, const float* sums, float* out) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y[8];
  for (int j = 0; j < 8; ++j) y[j] = static_cast<const BlockQ8_1*>(a[j]);
  __m256 acc[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  __m256 mins = _mm256_setzero_ps();
  for_each_block_scaled(x, dy, n / kQK, [&](int64_t b, const float* scales) {
    mins = _mm256_add_ps(mins, _mm256_mul_ps(_mm256_set1_ps(fp16(x[b].m)), _mm256_loadu_ps(sums + b * 8)));
    const __m256i qx = unpack_nibbles(x[b].qs);
    for_eight_rows([&]<int J>() { acc[J] = _mm256_fmadd_ps(_mm256_broadcast_ss(scales + J), byte_dot(qx, load32(y[J][b].qs)), acc[J]); });
  });
  alignas(32) float min_terms[8];
  _mm256_store_ps(min_terms, mins);
  for (int j = 0; j < 8; ++j) out[j] = hsum(acc[j]) + min_terms[j];
}

// One Q4_K super-block's weights, decoded once for any number of rows.
// The six-bit scales and mins are unpacked in registers: unpacked bytewise
// through memory, the eight-byte load of the mins could not be forwarded
// from the eight byte stores before it and stalled every block.
struct Q4KBlock {
  __m256i scales16;  // sub-block k's scale as the 16-bit lane k of both halves
  __m256i lo[4], hi[4];  // the 4-bit values of sub-blocks 2j and 2j+1
  __m128i mins16;
  float d, dmin;

  explicit Q4KBlock(const BlockQ4_K& x) {
    const __m128i scales_mins = q4k_scales_and_mins(x.scales);
    scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    mins16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins));
    const __m256i low_mask = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load32(x.qs + 32 * j);
      lo[j] = _mm256_and_si256(bits, low_mask);
      hi[j] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_mask);
    }
    d = fp16(x.d);
    dmin = fp16(x.dmin);
  }

  // Sub-block k's scale in every 16-bit lane.
  __m256i scale(int k) const { return _mm256_shuffle_epi8(scales16, _mm256_set1_epi16(short(0x0100 + 0x0202 * k))); }

  // Adds this block times activation block `y` into the row's accumulators,
  // in the order of the AVX2 kernel.
  void accumulate(const BlockQ8_K& y, __m256& acc, __m128& acc_mins) const {
    const __m128i bsums = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y.bsums)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(y.bsums + 8)));
    acc_mins = _mm_fmadd_ps(_mm_set1_ps(-y.d * dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins16, bsums)), acc_mins);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo[j], load32(y.qs + 64 * j)), scale(2 * j));
      const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi[j], load32(y.qs + 64 * j + 32)), scale(2 * j + 1));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p_lo, p_hi));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y.d * d), _mm256_cvtepi32_ps(sumi), acc);
  }
};

inline float finish_q4_k(__m256 acc, __m128 acc_mins) {
  acc_mins = _mm_add_ps(acc_mins, _mm_movehl_ps(acc_mins, acc_mins));
  acc_mins = _mm_add_ss(acc_mins, _mm_movehdup_ps(acc_mins));
  return hsum(acc) + _mm_cvtss_f32(acc_mins);
}

inline float dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_mins = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) Q4KBlock(x[b]).accumulate(y[b], acc, acc_mins);
  return finish_q4_k(acc, acc_mins);
}

inline void dot4_q4_k(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m128 acc_mins[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const Q4KBlock block(x[b]);
    for (int j = 0; j < 4; ++j) block.accumulate(static_cast<const BlockQ8_K*>(a[j])[b], acc[j], acc_mins[j]);
  }
  for (int j = 0; j < 4; ++j) out[j] = finish_q4_k(acc[j], acc_mins[j]);
}

// One Q6_K super-block's weights (stored as q + 32), decoded once.
struct Q6KBlock {
  __m256i q[2][4];
  __m256i scales16;  // the 16 scales as 16-bit lanes
  float d;

  explicit Q6KBlock(const BlockQ6_K& x) : d(fp16(x.d)) {
    const __m256i low_mask = _mm256_set1_epi8(0x0f);
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x.ql + 64 * half;
      const __m256i qh = load32(x.qh + 32 * half);
      const __m256i ql_bytes[2] = {load32(ql), load32(ql + 32)};
      for (int c = 0; c < 4; ++c) {
        const __m256i low = c < 2 ? _mm256_and_si256(ql_bytes[c], low_mask)
                                  : _mm256_and_si256(_mm256_srli_epi16(ql_bytes[c - 2], 4), low_mask);
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), two_bits), 4);
        q[half][c] = _mm256_or_si256(low, high);
      }
    }
  }

  // Chunk c of half `half`: its first 16 values' scale in the low half's
  // 16-bit lanes, its last 16's in the high half's (scales 8 half + 2c and
  // 8 half + 2c + 1), picked from scales16 in registers.
  __m256i chunk_scale(int half, int c) const {
    const __m256i half_scales = half == 0 ? _mm256_permute2x128_si256(scales16, scales16, 0x00)
                                          : _mm256_permute2x128_si256(scales16, scales16, 0x11);
    const short low = short(0x0100 + 0x0404 * c), high = short(0x0302 + 0x0404 * c);
    return _mm256_shuffle_epi8(half_scales, _mm256_set_m128i(_mm_set1_epi16(high), _mm_set1_epi16(low)));
  }

  void accumulate(const BlockQ8_K& y, __m256& acc) const {
    const __m256i correction = _mm256_slli_epi32(_mm256_madd_epi16(load32(y.bsums), scales16), 5);
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      for (int c = 0; c < 4; ++c) {
        const __m256i pairs = _mm256_maddubs_epi16(q[half][c], load32(y.qs + 128 * half + 32 * c));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pairs, chunk_scale(half, c)));
      }
    }
    sumi = _mm256_sub_epi32(sumi, correction);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y.d * d), _mm256_cvtepi32_ps(sumi), acc);
  }
};

inline float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) Q6KBlock(x[b]).accumulate(y[b], acc);
  return hsum(acc);
}

inline void dot4_q6_k(int64_t n, const void* w, const void* const* a, float* out) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const Q6KBlock block(x[b]);
    for (int j = 0; j < 4; ++j) block.accumulate(static_cast<const BlockQ8_K*>(a[j])[b], acc[j]);
  }
  for (int j = 0; j < 4; ++j) out[j] = hsum(acc[j]);
}


// The many-row kernels of a format whose weights are signed bytes per block.
template <ByteDot byte_dot, class Block, __m256i (*values)(const Block&)>
void set_signed_kernels(VecDotKernel& k) {
  k.fn4 = dot4_signed<byte_dot, Block, values>;
  k.fn8 = dot8_signed<byte_dot, Block, values>;
}

// The quantised formats' kernels over `byte_dot`; fn is null for others.
template <ByteDot byte_dot>
VecDotKernel x86_quant_vec_dot(DType weight_type) {
  VecDotKernel k = pick_vec_dot(weight_type, {{DType::kQ4_0, dot_signed<byte_dot, BlockQ4_0, q4_0_values>},
                                              {DType::kQ4_1, dot_q4_1<byte_dot>},
                                              {DType::kQ5_0, dot_signed<byte_dot, BlockQ5_0, q5_0_values>},
                                              {DType::kQ8_0, dot_signed<byte_dot, BlockQ8_0, q8_0_values>},
                                              {DType::kQ4_K, dot_q4_k},
                                              {DType::kQ6_K, dot_q6_k}});
  switch (weight_type) {
    case DType::kQ4_0: set_signed_kernels<byte_dot, BlockQ4_0, q4_0_values>(k); break;
    case DType::kQ5_0: set_signed_kernels<byte_dot, BlockQ5_0, q5_0_values>(k); break;
    case DType::kQ8_0: set_signed_kernels<byte_dot, BlockQ8_0, q8_0_values>(k); break;
    case DType::kQ4_1:
      k.fn4 = dot4_q4_1<byte_dot>;
      k.fn8 = dot8_q4_1<byte_dot>;
      break;
    case DType::kQ4_K: k.fn4 = dot4_q4_k; break;
    case DType::kQ6_K: k.fn4 = dot4_q6_k; break;
    default: break;
  }
  return k;
}

}  // namespace
}  // namespace tessera::cpu
