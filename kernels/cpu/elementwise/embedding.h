#pragma once
#include <cstdint>

#include "kernels/op_args.h"
#include "kernels/cpu/runtime/thread_pool.h"

namespace tessera::cpu {

// out[t] = table[ids[t] - first_id] expanded to f32, zeros for ids outside
// the table's rows (kernels/op_args.h); the table is in any format
// dequantize_row supports. Ids must have been checked by the caller.
void embedding_lookup(const EmbeddingArgs& args, ThreadPool& pool);

}  // namespace tessera::cpu
