#include "kernels/cpu/elementwise/activation.h"

#include <array>
#include <cmath>

#include "kernels/cpu/elementwise/activation_impl.h"

namespace tessera::cpu {
namespace {

// The GELU formula with 1 + c*x*x fused into one multiply-add, as an FMA
// build of llama.cpp evaluates it: a table entry that lies near a tie
// between two f16 values rounds the way llama.cpp's does.
float gelu_tanh_fused(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kGeluCoeff * x, x, 1.0f)));
}

struct GeluTable {
  GeluTable() {
    for (uint32_t i = 0; i < values.size(); ++i) values[i] = f32_to_f16(gelu_tanh_fused(f16_to_f32(uint16_t(i))));
  }
  std::array<uint16_t, 65536> values;
};

}  // namespace

const uint16_t* gelu_f16_table() {
  static const GeluTable table;  // built once, read-only afterwards
  return table.values.data();
}

void gated_activation_range_generic(GatedActivation act, const float* gate, const float* up, int64_t begin, int64_t end,
                                    float* out) {
  gated_activation_range(act, gate, up, begin, end, out);
}

void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out, ThreadPool& pool,
                      const IsaFeatures& isa) {
  const auto range = isa.avx2 && isa.fma && isa.f16c ? gated_activation_range_avx2 : gated_activation_range_generic;
  pool.parallel_for(n, 4096, [&](int, int64_t begin, int64_t end) { range(act, gate, up, begin, end, out); });
}

}  // namespace tessera::cpu
