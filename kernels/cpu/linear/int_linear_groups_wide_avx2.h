#pragma once
// The AVX2 row-group kernels' path for many tokens (prefill): weights
// widened to int16 once for a run of tokens (int_linear_groups_wide_avx2.cc).
#include <cstdint>

#include "kernels/cpu/linear/int_linear_groups.h"

namespace tessera::cpu {

// From this many tokens, A16 goes through a16_widened_avx2.
constexpr int64_t kWidenMinTokens = 16;

// A16 for any number of tokens, the same bits as the other row-group
// kernels; worth its widening from kWidenMinTokens tokens.
void a16_widened_avx2(const IntGroupLayout& l, const IntGroupTask& t);

}  // namespace tessera::cpu
