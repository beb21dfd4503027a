#include "kernels/cpu/elementwise/rope.h"

#include <array>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/elementwise/rope_impl.h"
#include "kernels/rope_angles.h"

namespace tessera::cpu {

void rotate_token_heads_fma(float* x, int n_heads, int head_dim, const ops::RopeParams& params, const float* cos_table,
                            const float* sin_table);

namespace {

constexpr int kMaxRotaryPairs = 1024;

}  // namespace

void apply_rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim, const RopeParams& params,
                ThreadPool& pool, const IsaFeatures& isa) {
  const int pairs = params.rotary_dim / 2;
  if (pairs < 0 || pairs > kMaxRotaryPairs) throw Error("rope: rotary dimension " + std::to_string(params.rotary_dim) + " unsupported");
  const auto rotate = isa.avx2 && isa.fma && isa.f16c ? rotate_token_heads_fma : rotate_token_heads;
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    std::array<float, kMaxRotaryPairs> cos_table, sin_table;  // on the stack: no allocation per call
    for (int64_t t = begin; t < end; ++t) {
      ops::rope_angles(params, positions[t], cos_table.data(), sin_table.data());
      rotate(x + t * n_heads * head_dim, n_heads, head_dim, params, cos_table.data(), sin_table.data());
    }
  });
}

}  // namespace tessera::cpu
