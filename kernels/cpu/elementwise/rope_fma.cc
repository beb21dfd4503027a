// The rotation built for FMA (with AVX2 and F16C, as the other x86 kernels).
#include "kernels/cpu/elementwise/rope_impl.h"

namespace tessera::cpu {

void rotate_token_heads_fma(float* x, int n_heads, int head_dim, const ops::RopeParams& params, const float* cos_table,
                            const float* sin_table) {
  rotate_token_heads(x, n_heads, head_dim, params, cos_table, sin_table);
}

}  // namespace tessera::cpu
