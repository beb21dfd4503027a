#include "kernels/cpu/linear/q8_0_pairs.h"

#include <cstring>

#include "engine/tensor/half.h"

namespace tessera::cpu {

void pack_q8_0_pairs(const BlockQ8_0* const rows[8], int64_t blocks, Q8_0PairBlock* out) {
  for (int64_t b = 0; b < blocks; ++b) {
    Q8_0PairBlock& o = out[b];
    for (int j = 0; j < 8; ++j) {
      const BlockQ8_0& in = rows[j][b];
      const int pair = j / 2, half = j % 2;
      std::memcpy(o.qs[pair] + half * kQK, in.qs, kQK);
      const float d = f16_to_f32(in.d);
      for (int lane = 0; lane < 8; ++lane) {
        const int32_t sum = int32_t(in.qs[4 * lane]) + in.qs[4 * lane + 1] + in.qs[4 * lane + 2] + in.qs[4 * lane + 3];
        o.bias[pair][half * 8 + lane] = -128 * sum;
        o.d[pair][half * 8 + lane] = d;
      }
    }
  }
}

}  // namespace tessera::cpu
