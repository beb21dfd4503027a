#pragma once
// Rotary position embedding applied in place to [n_tokens][n_heads][head_dim].
#include <cstdint>

#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/runtime/thread_pool.h"
#include "kernels/op_types.h"

namespace tessera::cpu {

using ops::RopeParams;
using ops::RopeStyle;

// `isa` picks the build (rope_fma.cc with FMA); every build gives the same bits.
void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool, const IsaFeatures& isa);

}  // namespace tessera::cpu
