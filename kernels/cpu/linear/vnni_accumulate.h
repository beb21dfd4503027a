#pragma once
// acc += the VNNI products of a and b, for loops that carry acc from one
// product to the next. GCC 12 compiles the intrinsics in such loops with a
// register copy before and after each product, which costs the integer
// kernels up to half their speed; the instruction written out directly keeps
// acc in one register. Include only from AVX-512 VNNI translation units.
//
// `Folded`: whether the compiler may read the second operand straight from
// memory. Kernels that reuse a loaded vector for several products want it
// kept in a register (false); those that use each load once save the load
// instruction (true).
#include <immintrin.h>

namespace tessera::cpu {

// acc (16 x int32) += sums of four unsigned bytes of u8 times the matching
// signed bytes of s8 (vpdpbusd).
template <bool Folded = false>
inline void dpbusd_into(__m512i& acc, __m512i u8, __m512i s8) {
#if defined(__GNUC__) && !defined(__clang__)
  if constexpr (Folded) asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "vm"(s8));
  else asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
#else
  acc = _mm512_dpbusd_epi32(acc, u8, s8);
#endif
}

// acc (16 x int32) += sums of two signed int16 of a times those of b (vpdpwssd).
template <bool Folded = false>
inline void dpwssd_into(__m512i& acc, __m512i a, __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  if constexpr (Folded) asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "vm"(b));
  else asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
#else
  acc = _mm512_dpwssd_epi32(acc, a, b);
#endif
}

}  // namespace tessera::cpu
