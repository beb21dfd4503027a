#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/vector_exp.h"

namespace tessera::cpu {
namespace {

float silu(float x) { return x / (1.0f + vector_expf(-x)); }

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCoeff = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoeff * x * x)));
}

}  // namespace

void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool) {
  pool.parallel_for(n, 4096, [&](int, int64_t begin, int64_t end) {
    if (act == GatedActivation::kSilu) {
      for (int64_t i = begin; i < end; ++i) out[i] = silu(gate[i]) * up[i];
    } else {
      for (int64_t i = begin; i < end; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
    }
  });
}

}  // namespace tessera::cpu
