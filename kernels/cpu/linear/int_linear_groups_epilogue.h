#pragma once
// The end of a span and of a row in the row-group kernels, shared by the
// AMX and the VNNI code so that both round identically (arithmetic in
// int_linear_groups.h). Include only from AVX-512 translation units.
#include <immintrin.h>

#include "kernels/cpu/linear/int_linear_groups.h"

namespace tessera::cpu {

// Lanes of a group that hold real rows.
inline __mmask16 row_mask(int64_t rows_left) {
  if (rows_left >= kRowGroup) return 0xFFFF;
  return rows_left <= 0 ? 0 : __mmask16((1u << rows_left) - 1);
}

// A16: the span's exact sum from its two byte products, joined to acc.
// `at` indexes the (group, span) entries of the task's per-row arrays.
inline __m512 a16_span_close(__m512i hi, __m512i lo, const IntGroupTask& t, size_t at, int32_t x_span_sum, __m512 acc) {
  __m512i s = _mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo);
  s = _mm512_sub_epi32(s, _mm512_loadu_si512(t.offsets + at));
  if (t.zeros) s = _mm512_sub_epi32(s, _mm512_mullo_epi32(_mm512_loadu_si512(t.zeros + at), _mm512_set1_epi32(x_span_sum)));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_loadu_ps(t.scales + at), acc);
}

// DA8: the row's exact sum, scaled.
inline __m512 a8_row_result(__m512i sum, const IntGroupTask& t, int64_t g, float x_scale) {
  const __m512i s = _mm512_sub_epi32(sum, _mm512_loadu_si512(t.offsets + g * kRowGroup));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(_mm512_set1_ps(x_scale), _mm512_loadu_ps(t.scales + g * kRowGroup)));
}

}  // namespace tessera::cpu
