#pragma once
// Rotary position embedding applied in place to [n_tokens][n_heads][head_dim].
#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace tessera::cpu {

enum class RopeStyle : uint8_t {
  kInterleaved,  // rotates pairs (2i, 2i+1): GGUF Llama checkpoints
  kHalves,       // rotates pairs (i, i + dim/2): Hugging Face, NeoX, Gemma, Qwen2
};

struct RopeParams {
  RopeStyle style = RopeStyle::kHalves;
  int rotary_dim = 0;            // leading dimensions of each head that rotate
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;       // linear position scaling (1 / factor)
  const float* freq_factors = nullptr;  // per-pair divisors (Llama 3 scaling), or null
};

void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool);

}  // namespace tessera::cpu
