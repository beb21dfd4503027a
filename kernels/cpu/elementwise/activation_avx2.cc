// The gated activation built for the AVX2/FMA/F16C instruction sets.
#include "kernels/cpu/elementwise/activation_impl.h"

namespace tessera::cpu {

void gated_activation_range_avx2(GatedActivation act, const float* gate, const float* up, int64_t begin, int64_t end,
                                 float* out) {
  gated_activation_range(act, gate, up, begin, end, out);
}

}  // namespace tessera::cpu
