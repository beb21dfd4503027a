#pragma once
// Hugging Face's MXFP4 checkpoint form (gpt-oss's NAME_blocks and
// NAME_scales) into GGUF's MXFP4 blocks. Both hold, per block of 32 values
// along a row, 4-bit E2M1 codes and one E8M0 exponent byte; they differ in
// where each code sits. Hugging Face packs value 2k into byte k's low nibble
// and 2k + 1 into its high nibble; GGUF puts values 0-15 in the low nibbles
// and 16-31 in the high ones (quant/gguf_blocks.h).
#include <cstdint>

#include "quant/gguf_blocks.h"

namespace tessera::quant {

// One row of `n_blocks` blocks: `packed` (n_blocks, 16) code bytes and
// `exponents` (n_blocks) into `out` (n_blocks).
void hf_mxfp4_row_to_blocks(const uint8_t* packed, const uint8_t* exponents, int64_t n_blocks, BlockMXFP4* out);

}  // namespace tessera::quant
