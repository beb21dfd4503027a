#pragma once
#include <cstdint>

#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/runtime/thread_pool.h"
#include "kernels/op_types.h"

namespace tessera::cpu {

using ops::GatedActivation;

// out[i] = act(gate[i]) * up[i] for i < n. `isa` picks the build; every
// build gives the same bits.
void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool,
                      const IsaFeatures& isa);

}  // namespace tessera::cpu
