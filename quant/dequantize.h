#pragma once
// Reference dequantisation of GGUF block formats and 16-bit floats to f32.
// Results are bit-identical to gguf-py's numpy reference: every product is
// rounded to f32 in the same order (this file is built without FMA contraction).
#include <cstdint>

#include "engine/tensor/dtype.h"

namespace tessera {

// True for the dtypes `dequantize_row` can expand.
bool can_dequantize(DType dtype);

// Expands `n_elems` elements (a whole number of blocks) from `src` into `dst`.
// Throws tessera::Error for an unsupported dtype or a partial block.
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n_elems);

}  // namespace tessera
