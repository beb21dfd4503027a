#pragma once
// Building blocks of the x86 dot-product kernels, for files compiled with at
// least -mavx2 -mfma -mf16c. Everything is internal to each including file.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/gguf_blocks.h"

namespace tessera::cpu {
namespace {

// Hardware f16 conversion (F16C); exact, like the portable one.
inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  lo = _mm_add_ps(lo, _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then
// high. The bytes are loaded into both halves at once and only the upper
// half shifted (what a byte takes from its neighbour is masked off).
inline __m256i unpack_nibbles(const uint8_t* p) {
  const __m256i twice = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi64(twice, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
}

// 32 bits -> 32 bytes, 0xFF where the bit is set.
inline __m256i expand_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i byte_of_bit = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), byte_of_bit);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// Sum of products of unsigned bytes `u` and signed bytes `s`, as 8 floats.
inline __m256 madd_us(__m256i u, __m256i s) {
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}


// Four f16 values as floats (a row's four block scales, say).
inline __m128 halves(uint16_t a, uint16_t b, uint16_t c, uint16_t d) {
  return _mm_cvtph_ps(_mm_setr_epi16(short(a), short(b), short(c), short(d), 0, 0, 0, 0));
}

// A Q4_K super-block's twelve bytes of six-bit scales and mins as 16
// bytes: the eight scales, then the eight mins (unpack_q4k_scales's layout).
// Bytes 0-3 hold scales 0-3 and bits 4-5 of scales 4-7 in their top two
// bits; 4-7 the same for the mins; 8-11 the low four bits of scales 4-7
// (low nibbles) and of mins 4-7 (high nibbles).
inline __m128i q4k_scales_and_mins(const uint8_t* s) {
  uint32_t w[3];
  std::memcpy(w, s, sizeof w);
  constexpr uint32_t kSixBits = 0x3f3f3f3f, kLowNibbles = 0x0f0f0f0f, kTwoBits = 0x03030303;
  const uint32_t scales_lo = w[0] & kSixBits, mins_lo = w[1] & kSixBits;
  const uint32_t scales_hi = (w[2] & kLowNibbles) | (((w[0] >> 6) & kTwoBits) << 4);
  const uint32_t mins_hi = ((w[2] >> 4) & kLowNibbles) | (((w[1] >> 6) & kTwoBits) << 4);
  return _mm_setr_epi32(int(scales_lo), int(scales_hi), int(mins_lo), int(mins_hi));
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Weight values of one 32-element block as signed bytes.
inline __m256i q4_0_values(const BlockQ4_0& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
inline __m256i q5_0_values(const BlockQ5_0& b) {
  // nibble | 0xF0 reads as nibble - 16 where the fifth bit is clear.
  const __m256i high = _mm256_andnot_si256(expand_bits(b.qh), _mm256_set1_epi8(char(0xf0)));
  return _mm256_or_si256(unpack_nibbles(b.qs), high);
}
inline __m256i q8_0_values(const BlockQ8_0& b) { return load32(b.qs); }

}  // namespace
}  // namespace tessera::cpu
