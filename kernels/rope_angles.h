#pragma once
// The rotation angles of RoPE as the CPU backend evaluates them, on the
// host: the CPU kernel calls this for each position, and accelerator
// backends read a table of its results (ops::RopeParams::cos_table), since
// their own sine and cosine round differently in a few percent of cases.
#include <cstdint>
#include <vector>

#include "kernels/op_types.h"

namespace tessera::ops {

// `params` with host pointers for inv_freq and freq_factors. Writes
// rotary_dim / 2 cosines and sines.
void rope_angles(const RopeParams& params, int32_t position, float* cos_out, float* sin_out);

// Cosines then sines of positions 0 .. positions-1:
// (positions, rotary_dim / 2) each, the layout RopeParams::cos_table reads.
std::vector<float> rope_table(const RopeParams& params, int32_t positions);

}  // namespace tessera::ops
