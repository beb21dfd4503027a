#pragma once
// Dot products of one weight row (in its stored format) with one activation
// row (quantised to the matching 8-bit format). One table per instruction
// set; the matmul driver picks the table once, at load.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include "engine/tensor/dtype.h"
#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/linear/q8_0_pairs.h"
#include "kernels/cpu/linear/q8_k_pairs.h"
#include "kernels/cpu/linear/row_groups.h"

namespace tessera::cpu {

// n: elements in the row (a whole number of weight blocks).
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* activation_row);

// Four activation rows at once: out[j] = dot(weight_row, activation_rows[j]),
// each summed exactly as the one-row kernel sums it, the weight block
// decoded once for all four (prefill).
using VecDot4Fn = void (*)(int64_t n, const void* weight_row, const void* const* activation_rows, float* out);

// Eight activation rows at once, for the 32-element formats: besides the
// rows, their block scales as f32, block-major (scales[b * 8 + j] is d of
// block b of row j) and likewise the Q8_1 sums s (null for Q8_0). Each output
// is summed exactly as the one-row kernel sums it.
using VecDot8Fn = void (*)(int64_t n, const void* weight_row, const void* const* activation_rows, const float* scales,
                           const float* sums, float* out);

// Eight Q8_0 activation rows packed as pair blocks (kernels/cpu/linear/q8_0_pairs.h):
// `n / 32` of them. Each output is summed exactly as the one-row kernel sums it.
using VecDotPairsFn = void (*)(int64_t n, const void* weight_row, const Q8_0PairBlock* pairs, float* out);

// VecDotPairsFn for kPairRows consecutive weight rows, `row_bytes` apart:
// out[r * 8 + j] is row r times token j. Each pair block is read once for all
// the rows, which keeps the product from waiting on the cache that holds the
// packed activations.
constexpr int kPairRows = 4;
using VecDotPairsRowsFn = void (*)(int64_t n, const void* weight_rows, size_t row_bytes, const Q8_0PairBlock* pairs,
                                   float* out);

// A few activation rows (decode, or a speculative step's verification)
// against kDecodeRows weight rows, `row_stride` bytes apart (the matmul
// driver passes rows a quarter of the weight apart): out[t * kDecodeRows + r]
// is row r times token t, summed exactly as the one-row kernel sums it.
// n_tokens is 1 to kMaxRowTokens. Each weight block is decoded once for all
// the tokens, and the rows' multiply-add chains run side by side, where one
// row's would wait on its own latency block after block.
constexpr int kDecodeRows = 4;
constexpr int kMaxRowTokens = 8;
using VecDotRowsFn = void (*)(int64_t n, const void* weight_rows, size_t row_stride, const void* const* activation_rows,
                              int n_tokens, float* out);

// Eight Q8_K activation rows packed as pair blocks (kernels/cpu/linear/q8_k_pairs.h):
// `n / 256` of them. Each output is summed exactly as the one-row kernel sums it.
using VecDotKPairsFn = void (*)(int64_t n, const void* weight_row, const Q8_KPairBlock* pairs, float* out);

// One or two tokens (n_tokens) against one group of 16 weight rows in the
// row-group layout (kernels/cpu/linear/row_groups.h), `blocks` blocks long:
// out[t * 16 + k] is row k times token t, summed exactly as the one-row
// kernel sums it. tokens[t] and scales[t] are token t's packed blocks.
using RowGroupFn = void (*)(int64_t blocks, const RowGroupBlock* w, const TokenBlock* const* tokens,
                            const float* const* scales, int n_tokens, float* out);

struct VecDotKernel {
  DType activation_type = DType::kF32;  // what activations are converted to
  VecDotFn fn = nullptr;
  VecDotRowsFn fn_rows = nullptr;  // optional, with fn for the rows left over
  VecDot4Fn fn4 = nullptr;  // optional
  VecDot8Fn fn8 = nullptr;  // optional
  VecDotPairsFn fn8_pairs = nullptr;  // optional; preferred over fn8 (Q8_0 activations only)
  VecDotPairsRowsFn fn8_pairs_rows = nullptr;  // optional, with fn8_pairs for the rows left over
  VecDotKPairsFn fn8_k_pairs = nullptr;  // optional; preferred over fn4 (Q8_K activations only)
  RowGroupFn fn_row_group = nullptr;  // optional; for prompts, where the weight has a row-group copy
  int row_group_offset = 128;  // what fn_row_group's copy adds to each value (RowGroups::repack)
};

// The activation format a weight format is multiplied against, or nullopt.
std::optional<DType> activation_type_for(DType weight_type);

// The entry for `weight_type` in one instruction set's list of kernels.
VecDotKernel pick_vec_dot(DType weight_type, std::initializer_list<std::pair<DType, VecDotFn>> kernels);

// The best kernel for `weight_type` on this CPU; fn is null if unsupported.
VecDotKernel select_vec_dot(DType weight_type, const IsaFeatures& isa);
// The portable reference kernels (also the fallback on CPUs without AVX2).
VecDotKernel scalar_vec_dot(DType weight_type);
VecDotKernel avx2_vec_dot(DType weight_type);
// AVX-512 (F, BW, VL, VNNI): bit-identical to the AVX2 kernels, faster.
VecDotKernel avx512_vec_dot(DType weight_type);

}  // namespace tessera::cpu
