#pragma once
// Eight Q8_0 activation rows laid out for kernels that hold two tokens per
// 512-bit register: each block of the eight rows becomes one Q8_0PairBlock,
// packed once per product and read by every weight row. Besides the values
// it carries each token's scale spread over its lanes and the offset bias
// −128 · (sum of each four values), which lets a kernel multiply weights
// stored as unsigned q + 128 by the signed values in one VNNI instruction
// and still form exactly Σ q·y in every 32-bit lane.
#include <cstdint>

#include "quant/gguf_blocks.h"

namespace tessera::cpu {

// One block (32 elements) of tokens 0..7; pair p holds tokens 2p and 2p + 1.
struct alignas(64) Q8_0PairBlock {
  int8_t qs[4][64];     // [pair][token 2p: 32 values, then token 2p + 1: 32]
  int32_t bias[4][16];  // [pair][8 lanes of token 2p, then of 2p + 1]: −128 · Σ of values 4i..4i+3
  float d[4][16];       // [pair][token 2p's scale × 8, then 2p + 1's × 8]
};

// rows[j]: `blocks` blocks of token j. out: `blocks` pair blocks.
void pack_q8_0_pairs(const BlockQ8_0* const rows[8], int64_t blocks, Q8_0PairBlock* out);

}  // namespace tessera::cpu
