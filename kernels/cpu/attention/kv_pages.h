#pragma once
// Writing tokens' keys and values into their KV cache slots, in each page
// format: f32, f16 (round to nearest even) or int8 with one symmetric scale
// per token and head (scale = max|x| / 127, so the largest element is exact
// to rounding and nothing clips).
#include <cstdint>

#include "kernels/op_args.h"

namespace tessera::cpu {

// q[i] = round(x[i] / scale), the scale returned; 0 for an all-zero row.
float quantize_kv_row_int8(const float* x, int n, int8_t* q);

void write_kv_rows(const KvWriteArgs& args);

}  // namespace tessera::cpu
