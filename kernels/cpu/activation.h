#pragma once
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::cpu {

enum class GatedActivation : uint8_t {
  kSilu,      // SwiGLU: silu(gate) * up (Llama, Mistral, Qwen2)
  kGeluTanh,       // GeGLU with the tanh approximation (Gemma), evaluated exactly
  kGeluTanhTable,  // the same through a table over f16 inputs, as llama.cpp evaluates it
};

// out[i] = act(gate[i]) * up[i] for i < n. `isa` picks the build; every
// build gives the same bits.
void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool,
                      const IsaFeatures& isa);

}  // namespace tessera::cpu
