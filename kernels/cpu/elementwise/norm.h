#pragma once
#include <cstdint>

#include "kernels/cpu/runtime/thread_pool.h"

namespace tessera::cpu {

// out[r] = x[r] / rms(x[r]) * (weight + weight_offset), row by row.
// weight_offset is 1 for checkpoints that store (w - 1), as Gemma's do.
void rms_norm(const float* x, const float* weight, float weight_offset, float eps, int64_t n_rows, int64_t dim,
              float* out, ThreadPool& pool);

}  // namespace tessera::cpu
