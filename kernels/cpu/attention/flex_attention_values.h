#pragma once
// The value pass of the flex attention kernel: each query row's output is
// the probability-weighted sum of the values of the keys it sees, key k
// summed into lane k % 16 in increasing order and the lanes then reduced,
// the arithmetic of a 16-wide multiply over keys. Compiled once per
// instruction set with the kernel body (flex_attention_impl.h).
#include <algorithm>
#include <cmath>
#include <cstddef>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/cpu/attention/lane_sum.h"

// Internal linkage, as in flex_attention_impl.h: each build its own copy.
namespace tessera::cpu {
namespace {

// Up to kValueRows query rows that see the same keys [lo, hi] (heads of one
// token that share a KV head) go through the values together, each value
// read once for all of them, in chunks of kValueChunk elements of d so that
// their accumulators stay in the first-level cache.
constexpr int kValueRows = 4, kValueChunk = 64;

// The values of a span's keys, converted once and grouped by the lane that
// sums them (key k in lane k % 16): a lane's keys lie in increasing order,
// one after another, so its pass over them reads memory in sequence.
struct LaneValues {
  float* data;   // [16][per_lane][dim]
  int base;      // the first key of lane 0's run: a multiple of 16
  int per_lane;  // rows a lane holds
  int dim;

  static size_t floats(int span_first, int span_last, int dim) {
    const int base = span_first - span_first % kLanes;
    return size_t(kLanes) * size_t((span_last - base) / kLanes + 1) * size_t(dim);  // span_last >= base - 1
  }
  LaneValues(float* buffer, int span_first, int span_last, int head_dim)
      : data(buffer), base(span_first - span_first % kLanes), per_lane((span_last - base) / kLanes + 1), dim(head_dim) {}
  size_t lane_stride() const { return size_t(per_lane) * size_t(dim); }  // from key k to key k + 1 within a run of 16
  float* row(int k) const {
    const int i = k - base;
    return data + (size_t(i % kLanes) * size_t(per_lane) + size_t(i / kLanes)) * size_t(dim);
  }
};

// a_i[d] = fma(v[3][d], p[i][3], fma(v[2][d], p[i][2], fma(v[1][d], p[i][1],
// fma(v[0][d], p[i][0], a_i[d])))) for d < n and the one or two rows i of
// `p`: four keys into one lane of each row, the values read once for both.
inline void add_four_keys(const float* const v[4], const float (*p)[4], int rows, int n, float* a0, float* a1) {
  int d = 0;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 pb[2][4];
  for (int i = 0; i < rows; ++i) {
    for (int m = 0; m < 4; ++m) pb[i][m] = _mm256_set1_ps(p[i][m]);
  }
  float* const a[2] = {a0, a1};
  for (; d + 8 <= n; d += 8) {
    const __m256 v0 = _mm256_loadu_ps(v[0] + d), v1 = _mm256_loadu_ps(v[1] + d);
    const __m256 v2 = _mm256_loadu_ps(v[2] + d), v3 = _mm256_loadu_ps(v[3] + d);
    for (int i = 0; i < rows; ++i) {
      __m256 s = _mm256_loadu_ps(a[i] + d);
      s = _mm256_fmadd_ps(v0, pb[i][0], s);
      s = _mm256_fmadd_ps(v1, pb[i][1], s);
      s = _mm256_fmadd_ps(v2, pb[i][2], s);
      s = _mm256_fmadd_ps(v3, pb[i][3], s);
      _mm256_storeu_ps(a[i] + d, s);
    }
  }
#endif
  for (; d < n; ++d) {
    a0[d] = std::fma(v[3][d], p[0][3], std::fma(v[2][d], p[0][2], std::fma(v[1][d], p[0][1], std::fma(v[0][d], p[0][0], a0[d]))));
    if (rows > 1) {
      a1[d] = std::fma(v[3][d], p[1][3], std::fma(v[2][d], p[1][2], std::fma(v[1][d], p[1][1], std::fma(v[0][d], p[1][0], a1[d]))));
    }
  }
}

// The 16-lane reduction tree of weighted_values, applied to every d at once:
// o[i][d0 + d] from lanes [row][lane][kValueChunk].
template <int kRows>
void reduce_value_lanes(float* lanes, int dn, float* const* o, int d0) {
  auto lane = [&](int i, int l) { return lanes + (size_t(i) * kLanes + size_t(l)) * kValueChunk; };
  for (int i = 0; i < kRows; ++i) {
    for (int h = 0; h < 8; ++h) {
      for (int d = 0; d < dn; ++d) lane(i, h)[d] = lane(i, h + 8)[d] + lane(i, h)[d];
    }
    for (int h = 0; h < 4; ++h) {
      for (int d = 0; d < dn; ++d) lane(i, h)[d] = lane(i, h + 4)[d] + lane(i, h)[d];
    }
    float* out = o[i] + d0;
    for (int d = 0; d < dn; ++d) out[d] = (lane(i, 0)[d] + lane(i, 2)[d]) + (lane(i, 1)[d] + lane(i, 3)[d]);
  }
}

#if defined(__AVX512F__)
// reduce_value_lanes for dn % 16 == 0, sixteen elements of d at a time.
template <int kRows>
void reduce_value_lanes_avx512(const float* lanes, int dn, float* const* o, int d0) {
  for (int i = 0; i < kRows; ++i) {
    const float* row = lanes + size_t(i) * kLanes * kValueChunk;
    for (int d = 0; d < dn; d += kLanes) {
      __m512 half[8], quarter[4];
      for (int h = 0; h < 8; ++h) {
        half[h] = _mm512_add_ps(_mm512_loadu_ps(row + size_t(h + 8) * kValueChunk + d), _mm512_loadu_ps(row + size_t(h) * kValueChunk + d));
      }
      for (int h = 0; h < 4; ++h) quarter[h] = _mm512_add_ps(half[h + 4], half[h]);
      _mm512_storeu_ps(o[i] + d0 + d, _mm512_add_ps(_mm512_add_ps(quarter[0], quarter[2]), _mm512_add_ps(quarter[1], quarter[3])));
    }
  }
}

// Lane l's sums for kRows rows and kVectors * 16 elements of d, kept in
// registers over all its keys (k = l mod 16, in increasing order, from
// zero): the same multiply-adds in the same order as weighted_values'
// general pass, each lane stored once. lanes: acc's [row][lane][kValueChunk] layout.
template <int kRows, int kVectors>
void lane_values_in_registers(const float* const* w, const LaneValues& v, int first, int lo, int hi, int d0, float* lanes) {
  for (int l = 0; l < kLanes; ++l) {
    __m512 a[kRows][kVectors];
    for (auto& row : a) for (auto& x : row) x = _mm512_setzero_ps();
    int k = lo + (l - lo % kLanes + kLanes) % kLanes;  // the first key of this lane
    const float* vk = k <= hi ? v.row(k) + d0 : nullptr;
    for (; k <= hi; k += kLanes, vk += v.dim) {
      __m512 vv[kVectors];
      for (int j = 0; j < kVectors; ++j) {
        vv[j] = _mm512_loadu_ps(vk + 16 * j);
        // Held in a register: folded into each row's multiply-add, the
        // value would be loaded once a row, and loads are the bottleneck.
        asm("" : "+v"(vv[j]));
      }
      for (int i = 0; i < kRows; ++i) {
        const __m512 p = _mm512_set1_ps(w[i][k - first]);
        for (int j = 0; j < kVectors; ++j) a[i][j] = _mm512_fmadd_ps(vv[j], p, a[i][j]);
      }
    }
    for (int i = 0; i < kRows; ++i) {
      float* out = lanes + (size_t(i) * kLanes + size_t(l)) * kValueChunk;
      for (int j = 0; j < kVectors; ++j) _mm512_storeu_ps(out + 16 * j, a[i][j]);
    }
  }
}
#elif defined(__AVX2__) && defined(__FMA__)
// reduce_value_lanes for dn % 8 == 0, eight elements of d at a time.
template <int kRows>
void reduce_value_lanes_avx2(const float* lanes, int dn, float* const* o, int d0) {
  for (int i = 0; i < kRows; ++i) {
    const float* row = lanes + size_t(i) * kLanes * kValueChunk;
    for (int d = 0; d < dn; d += 8) {
      __m256 half[8], quarter[4];
      for (int h = 0; h < 8; ++h) {
        half[h] = _mm256_add_ps(_mm256_loadu_ps(row + size_t(h + 8) * kValueChunk + d), _mm256_loadu_ps(row + size_t(h) * kValueChunk + d));
      }
      for (int h = 0; h < 4; ++h) quarter[h] = _mm256_add_ps(half[h + 4], half[h]);
      _mm256_storeu_ps(o[i] + d0 + d, _mm256_add_ps(_mm256_add_ps(quarter[0], quarter[2]), _mm256_add_ps(quarter[1], quarter[3])));
    }
  }
}

// Lane l's sums for kRows rows and elements [d0 + e0, d0 + e0 + 8 * kVectors)
// of d, in registers over all its keys (k = l mod 16, increasing): the
// general pass's multiply-adds in its order, each lane stored once.
// lanes: acc's [row][lane][kValueChunk] layout.
template <int kRows, int kVectors>
void lane_values_in_registers(const float* const* w, const LaneValues& v, int first, int lo, int hi, int d0, int e0,
                              float* lanes) {
  for (int l = 0; l < kLanes; ++l) {
    __m256 a[kRows][kVectors];
    for (auto& row : a) for (auto& x : row) x = _mm256_setzero_ps();
    int k = lo + (l - lo % kLanes + kLanes) % kLanes;  // the first key of this lane
    const float* vk = k <= hi ? v.row(k) + d0 + e0 : nullptr;
    for (; k <= hi; k += kLanes, vk += v.dim) {
      // Each row's probability, then one value at a time: kRows + 1 live
      // vectors beside the sums.
      __m256 p[kRows];
      for (int i = 0; i < kRows; ++i) p[i] = _mm256_broadcast_ss(&w[i][k - first]);
      for (int j = 0; j < kVectors; ++j) {
        const __m256 vv = _mm256_loadu_ps(vk + 8 * j);
        for (int i = 0; i < kRows; ++i) a[i][j] = _mm256_fmadd_ps(vv, p[i], a[i][j]);
      }
    }
    for (int i = 0; i < kRows; ++i) {
      float* out = lanes + (size_t(i) * kLanes + size_t(l)) * kValueChunk + e0;
      for (int j = 0; j < kVectors; ++j) _mm256_storeu_ps(out + 8 * j, a[i][j]);
    }
  }
}
#endif

// o[i][d] = sum over keys k in [lo, hi] of row i's probability times
// value[d], key k summed into lane k % 16 in increasing order, then the lanes
// reduced: the arithmetic of a 16-wide multiply over keys. Row i's
// probability of key k is w[i][k - first]; the value row of key k is
// v.row(k). Only elements [d_begin, d_end) are written: each element's sum
// is its own, so any split of d gives the same bits.
// acc: kValueRows * 16 * kValueChunk floats.
template <int kRows>
void weighted_values(const float* const* w, const LaneValues& v, int first, int lo, int hi, int d_begin, int d_end, float* acc,
                     float* const* o) {
  for (int d0 = d_begin; d0 < d_end; d0 += kValueChunk) {
    const int dn = std::min(kValueChunk, d_end - d0);
#if defined(__AVX512F__)
    if (dn % 16 == 0) {
      switch (dn / 16) {
        case 1: lane_values_in_registers<kRows, 1>(w, v, first, lo, hi, d0, acc); break;
        case 2: lane_values_in_registers<kRows, 2>(w, v, first, lo, hi, d0, acc); break;
        case 3: lane_values_in_registers<kRows, 3>(w, v, first, lo, hi, d0, acc); break;
        default: lane_values_in_registers<kRows, 4>(w, v, first, lo, hi, d0, acc); break;
      }
      reduce_value_lanes_avx512<kRows>(acc, dn, o, d0);
      continue;
    }
#elif defined(__AVX2__) && defined(__FMA__)
    // Up to three rows take 32 elements of d a pass (4 * kRows sums, kRows
    // probabilities and a value in the 16 registers): with 16 elements
    // their 2 * kRows chains of multiply-adds were too few to hide the
    // instruction's latency. Four rows take 16 (eight chains).
    if (kRows <= 3 && dn % 32 == 0) {
      for (int e0 = 0; e0 < dn; e0 += 32) lane_values_in_registers<kRows, 4>(w, v, first, lo, hi, d0, e0, acc);
      reduce_value_lanes_avx2<kRows>(acc, dn, o, d0);
      continue;
    }
    if (dn % 16 == 0) {
      for (int e0 = 0; e0 < dn; e0 += 16) lane_values_in_registers<kRows, 2>(w, v, first, lo, hi, d0, e0, acc);
      reduce_value_lanes_avx2<kRows>(acc, dn, o, d0);
      continue;
    }
#endif
    std::fill(acc, acc + size_t(kRows) * kLanes * kValueChunk, 0.0f);
    auto lane = [&](int i, int l) { return acc + (size_t(i) * kLanes + size_t(l)) * kValueChunk; };
    auto value = [&](int k) { return v.row(k) + d0; };
    auto add_key = [&](int k) {
      const float* __restrict vk = value(k);
      for (int i = 0; i < kRows; ++i) {
        const float p = w[i][k - first];
        float* __restrict a = lane(i, k % kLanes);
        for (int d = 0; d < dn; ++d) a[d] = std::fma(vk[d], p, a[d]);
      }
    };
    int k = lo;
    for (; k <= hi && k % kLanes != 0; ++k) add_key(k);
    // Whole runs of 64 keys: each lane takes its four keys (k + l, + 16, + 32,
    // + 48) in one pass, in the same order, storing its sum once, not four
    // times.
    for (; k + 4 * kLanes - 1 <= hi; k += 4 * kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float* v4[4] = {value(k + l), value(k + l + kLanes), value(k + l + 2 * kLanes), value(k + l + 3 * kLanes)};
        float p[kRows][4];
        for (int i = 0; i < kRows; ++i) {
          for (int m = 0; m < 4; ++m) p[i][m] = w[i][k + l + m * kLanes - first];
        }
        for (int i = 0; i < kRows; i += 2) {
          const int pair = std::min(2, kRows - i);
          add_four_keys(v4, p + i, pair, dn, lane(i, l), pair > 1 ? lane(i + 1, l) : nullptr);
        }
      }
    }
    for (; k <= hi; ++k) add_key(k);
    reduce_value_lanes<kRows>(acc, dn, o, d0);
  }
}

}  // namespace
}  // namespace tessera::cpu
