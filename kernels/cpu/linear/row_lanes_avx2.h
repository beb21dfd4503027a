#pragma once
// Eight rows' outputs of an AVX2 row-group kernel, of which the first
// `rows_left` are real. Included only by sources compiled for AVX2.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace tessera::cpu {

// Masked moves only at the weight's last rows: on some cores (AMD's) a
// masked store is microcoded and far slower than a plain one.
struct RowLanes {
  int64_t rows_left;
  __m256i mask;
  explicit RowLanes(int64_t left)
      : rows_left(left),
        mask(_mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(std::clamp<int64_t>(left, 0, 8))),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))) {}
  __m256 load(const float* y) const { return rows_left >= 8 ? _mm256_loadu_ps(y) : _mm256_maskload_ps(y, mask); }
  void store(float* y, __m256 v) const {
    if (rows_left >= 8) _mm256_storeu_ps(y, v);
    else _mm256_maskstore_ps(y, mask, v);
  }
};

}  // namespace tessera::cpu
