#pragma once
#include <cstdint>

#include "engine/tensor/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::cpu {

// out[t] = table[ids[t]] expanded to f32; the table is [vocab][dim] in any
// format dequantize_row supports. Ids must have been checked by the caller.
void embedding_lookup(DType table_type, const void* table, int64_t dim, const int32_t* ids, int64_t n_tokens, float* out,
                      ThreadPool& pool);

}  // namespace tessera::cpu
