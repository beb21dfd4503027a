#include "kernels/cpu/activation.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "engine/tensor/half.h"

#include "kernels/cpu/vector_exp.h"

namespace tessera::cpu {
namespace {

float silu(float x) { return x / (1.0f + vector_expf(-x)); }

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

float gelu_tanh(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoeff * x * x))); }

// The same formula with 1 + c*x*x fused into one multiply-add, as an FMA
// build of llama.cpp evaluates it: a table entry that lies near a tie
// between two f16 values rounds the way llama.cpp's does.
float gelu_tanh_fused(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kGeluCoeff * x, x, 1.0f)));
}

// GELU through a table over every f16 input, the way llama.cpp's CPU backend
// evaluates it: inputs are rounded to f16 and so are the results.
class GeluTable {
 public:
  GeluTable() {
    for (uint32_t i = 0; i < table_.size(); ++i) table_[i] = f32_to_f16(gelu_tanh_fused(f16_to_f32(uint16_t(i))));
  }
  float operator()(float x) const {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return f16_to_f32(table_[f32_to_f16(x)]);
  }

 private:
  std::array<uint16_t, 65536> table_;
};

const GeluTable& gelu_table() {
  static const GeluTable table;  // built once, read-only afterwards
  return table;
}

}  // namespace

void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool) {
  pool.parallel_for(n, 4096, [&](int, int64_t begin, int64_t end) {
    switch (act) {
      case GatedActivation::kSilu:
        for (int64_t i = begin; i < end; ++i) out[i] = silu(gate[i]) * up[i];
        break;
      case GatedActivation::kGeluTanh:
        for (int64_t i = begin; i < end; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
        break;
      case GatedActivation::kGeluTanhTable: {
        const GeluTable& gelu = gelu_table();
        for (int64_t i = begin; i < end; ++i) out[i] = gelu(gate[i]) * up[i];
        break;
      }
    }
  });
}

}  // namespace tessera::cpu
