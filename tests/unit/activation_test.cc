// The gated activations: every instruction-set build gives the portable
// build's bits, and the values are the functions they name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/tensor/half.h"
#include "kernels/cpu/elementwise/activation.h"

namespace tessera::cpu {
namespace {

// Gate values over the whole range the kernels treat differently: small,
// around the GELU table's ±10 cut-offs, and far enough out that e^-x leaves
// the normal exponents in SiLU.
std::vector<float> gate_values() {
  std::vector<float> gate;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int i = 0; i < 4000; ++i) gate.push_back(normal(rng));
  for (float x : {-10.0f, 10.0f, -9.999f, 9.999f, -10.01f, 10.01f, -90.0f, 90.0f, -200.0f, 200.0f, -0.0f, 0.0f}) gate.push_back(x);
  while (gate.size() % 8 != 3) gate.push_back(0.5f);  // a scalar tail after the vector groups
  return gate;
}

TEST(GatedActivation, EveryBuildGivesThePortableBits) {
  const std::vector<float> gate = gate_values();
  std::vector<float> up(gate.size());
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (float& u : up) u = uniform(rng);
  ThreadPool pool(2);
  for (GatedActivation act : {GatedActivation::kSilu, GatedActivation::kGeluTanh, GatedActivation::kGeluTanhTable}) {
    std::vector<float> portable(gate.size()), native(gate.size());
    gated_activation(act, gate.data(), up.data(), int64_t(gate.size()), portable.data(), pool, IsaFeatures{});
    gated_activation(act, gate.data(), up.data(), int64_t(gate.size()), native.data(), pool, detect_isa());
    EXPECT_EQ(0, std::memcmp(portable.data(), native.data(), native.size() * sizeof(float))) << int(act);
    for (size_t i = 0; i < gate.size(); ++i) {
      const double x = gate[i];
      const double silu = x / (1.0 + std::exp(-x));
      const double gelu = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      const double want = (act == GatedActivation::kSilu ? silu : gelu) * up[i];
      // The table rounds input and result to f16: 2^-10 relative, plus the
      // slope of GELU times the input rounding.
      const double tolerance = act == GatedActivation::kGeluTanhTable ? 4e-3 * (1.0 + std::fabs(x)) * std::fabs(up[i]) + 1e-6
                                                                        : 1e-5 * (1.0 + std::fabs(want));
      ASSERT_NEAR(native[i], want, tolerance) << "activation " << int(act) << " x " << x;
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
