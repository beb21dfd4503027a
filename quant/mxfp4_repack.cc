#include "quant/mxfp4_repack.h"

namespace tessera::quant {

void hf_mxfp4_row_to_blocks(const uint8_t* packed, const uint8_t* exponents, int64_t n_blocks, BlockMXFP4* out) {
  constexpr int kBytes = kQK / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* in = packed + b * kBytes;
    uint8_t codes[kQK];  // in value order
    for (int k = 0; k < kBytes; ++k) {
      codes[2 * k] = in[k] & 0x0f;
      codes[2 * k + 1] = in[k] >> 4;
    }
    BlockMXFP4& block = out[b];
    block.e = exponents[b];
    for (int j = 0; j < kBytes; ++j) block.qs[j] = uint8_t(codes[j] | codes[j + kBytes] << 4);
  }
}

}  // namespace tessera::quant
