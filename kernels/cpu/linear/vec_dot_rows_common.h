#pragma once
// What every instruction set's decode-rows kernels (VecDotRowsFn) share:
// the row pointers and the dispatch on the token count. Internal to each
// including file.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/linear/vec_dot.h"

namespace tessera::cpu {
namespace {

// Pointers to kRows weight rows `row_stride` bytes apart.
template <class Block, int kRows>
inline void row_pointers(const void* w, size_t row_stride, const Block* (&x)[kRows]) {
  for (int r = 0; r < kRows; ++r) x[r] = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + size_t(r) * row_stride);
}

// Calls kernel.operator()<T>() with T = n_tokens, 1 to kMaxRowTokens, so
// that each token count gets its own unrolled accumulators.
template <class Kernel>
inline void for_token_count(int n_tokens, const Kernel& kernel) {
  switch (n_tokens) {
    case 1: kernel.template operator()<1>(); return;
    case 2: kernel.template operator()<2>(); return;
    case 3: kernel.template operator()<3>(); return;
    case 4: kernel.template operator()<4>(); return;
    case 5: kernel.template operator()<5>(); return;
    case 6: kernel.template operator()<6>(); return;
    case 7: kernel.template operator()<7>(); return;
    default: kernel.template operator()<kMaxRowTokens>(); return;
  }
}

}  // namespace
}  // namespace tessera::cpu
