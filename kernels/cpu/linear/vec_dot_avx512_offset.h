#pragma once
// AVX-512 one-row (decode) kernels for the formats whose weights are signed
// bytes per 32-element block (Q4_0, Q5_0, Q8_0). The weight is read as
// unsigned bytes q + c, so VNNI multiplies it by the signed activations in
// one instruction, and the surplus c·Σy of each four-byte lane is taken off
// by starting the accumulation at −c·Σy, formed from the activation block.
// Every lane holds the same integer as the AVX2 kernels' sign-trick lanes,
// and the float accumulation is theirs: the same bits.
// For vec_dot_avx512.cc only.
#include <immintrin.h>

#include "kernels/cpu/linear/simd_avx2.h"

namespace tessera::cpu {
namespace {

// Weight blocks as unsigned bytes q + kOffset.
struct Q4_0Offset {
  using Block = BlockQ4_0;
  static constexpr char kOffset = 8;
  static __m256i values(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_0Offset {
  using Block = BlockQ5_0;
  static constexpr char kOffset = 16;
  static __m256i values(const Block& b) {
    uint32_t bits;
    std::memcpy(&bits, b.qh, 4);
    const __m256i nibbles = unpack_nibbles(b.qs);
    return _mm256_mask_add_epi8(nibbles, _cvtu32_mask32(bits), nibbles, _mm256_set1_epi8(16));
  }
};
struct Q8_0Offset {
  using Block = BlockQ8_0;
  static constexpr char kOffset = char(0x80);
  static __m256i values(const Block& b) { return _mm256_xor_si256(load32(b.qs), _mm256_set1_epi8(char(0x80))); }
};

// −kOffset · (sum of each four bytes of qy), per 32-bit lane.
template <class Format>
inline __m256i offset_bias(__m256i qy) {
  const __m256i zero = _mm256_setzero_si256();
  return _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, _mm256_set1_epi8(Format::kOffset), qy));
}

template <class Format>
float dot_offset(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const typename Format::Block*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK; ++b) {
    const __m256i qy = load32(y[b].qs);
    const __m256i sum = _mm256_dpbusd_epi32(offset_bias<Format>(qy), Format::values(x[b]), qy);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16(x[b].d) * fp16(y[b].d)), _mm256_cvtepi32_ps(sum), acc);
  }
  return hsum(acc);
}

}  // namespace
}  // namespace tessera::cpu
