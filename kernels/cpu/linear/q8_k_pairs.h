#pragma once
// Eight Q8_K activation rows laid out for the K-quant kernels that hold two
// tokens per 512-bit register (as kernels/cpu/linear/q8_0_pairs.h does for Q8_0):
// one Q8_KPairBlock per super-block of the eight rows, packed once per
// product and read by every weight row. Besides the values it carries what
// the one-row kernels form from each block's sums, ready to load: Q4_K's
// sums per 32 values, Q6_K's per 16, and each token's scale spread over its
// lanes.
#include <cstdint>

#include "quant/gguf_blocks.h"

namespace tessera::cpu {

// One super-block (256 elements) of tokens 0..7; pair p holds tokens 2p and 2p + 1.
struct alignas(64) Q8_KPairBlock {
  int8_t qs[8][4][64];           // [32-value chunk][pair][token 2p's 32 values, then 2p + 1's]
  float d[4][16];                // [pair][token 2p's d × 8, then 2p + 1's × 8]
  float neg_d[4][8];             // [pair][−d of token 2p × 4, then of 2p + 1 × 4]
  int16_t sums32[4][16];         // [pair][token 2p's sum of each 32 values × 8, then 2p + 1's]
  int16_t sums16[4][32];         // [pair][token 2p's bsums × 16, then 2p + 1's]
};

// rows[j]: `blocks` super-blocks of token j. out: `blocks` pair blocks.
void pack_q8_k_pairs(const BlockQ8_K* const rows[8], int64_t blocks, Q8_KPairBlock* out);

}  // namespace tessera::cpu
