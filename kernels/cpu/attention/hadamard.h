#pragma once
// The orthonormal Walsh-Hadamard transform of one head's row, in place.
// int8 KV pages store keys rotated by it: a few large channels (the
// outliers some models' keys carry) spread over the whole row, so one
// per-token scale no longer flattens the small channels to zero. The
// transform is symmetric and its own inverse, so attention rotates the
// queries the same way and q·k is unchanged.
#include <cmath>

namespace tessera::cpu {

inline bool hadamard_applies(int n) { return n >= 2 && (n & (n - 1)) == 0; }

// x: [n], n a power of two (see hadamard_applies).
inline void walsh_hadamard(float* x, int n) {
  for (int len = 1; len < n; len <<= 1) {
    for (int block = 0; block < n; block += 2 * len) {
      for (int i = block; i < block + len; ++i) {
        const float a = x[i], b = x[i + len];
        x[i] = a + b;
        x[i + len] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(float(n));
  for (int i = 0; i < n; ++i) x[i] *= norm;
}

}  // namespace tessera::cpu
