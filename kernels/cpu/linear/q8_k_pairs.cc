#include "kernels/cpu/linear/q8_k_pairs.h"

#include <cstring>

namespace tessera::cpu {

void pack_q8_k_pairs(const BlockQ8_K* const rows[8], int64_t blocks, Q8_KPairBlock* out) {
  constexpr int kChunk = 32;
  for (int64_t b = 0; b < blocks; ++b) {
    Q8_KPairBlock& o = out[b];
    for (int j = 0; j < 8; ++j) {
      const BlockQ8_K& in = rows[j][b];
      const int pair = j / 2, half = j % 2;
      for (int c = 0; c < kQK_K / kChunk; ++c) std::memcpy(o.qs[c][pair] + half * kChunk, in.qs + c * kChunk, kChunk);
      for (int lane = 0; lane < 8; ++lane) o.d[pair][half * 8 + lane] = in.d;
      for (int lane = 0; lane < 4; ++lane) o.neg_d[pair][half * 4 + lane] = -in.d;
      // Each bsum is at most 16 · 128 in magnitude, so a sum of two fits 16 bits.
      for (int g = 0; g < 8; ++g) o.sums32[pair][half * 8 + g] = int16_t(in.bsums[2 * g] + in.bsums[2 * g + 1]);
      std::memcpy(o.sums16[pair] + half * 16, in.bsums, sizeof in.bsums);
    }
  }
}

}  // namespace tessera::cpu
