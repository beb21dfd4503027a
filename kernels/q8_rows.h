#pragma once
// Activations quantized to 8 bits per 32-element chunk, as the CPU backend
// quantizes them before multiplying GGUF block weights (kernels/cpu/
// quantize_rows.cc), laid out for accelerators: one array per field in one
// allocation. Shared by the CUDA and XPU backends' host code.
#include <cstddef>
#include <cstdint>

#include "engine/tensor/dtype.h"

namespace tessera {

struct Q8Rows {
  int8_t* qs;  // (n_tokens, cols)
  float* d;    // (n_tokens, cols / 32): the chunk's scale (Q8_0/Q8_1: the f16 scale widened; Q8_K: its super-block's)
  float* s;    // (n_tokens, cols / 32): Q8_1: the f16 d * sum(qs); Q8_K: sum(qs) of the chunk; Q8_0: unused
};

inline constexpr int64_t kQ8Chunk = 32;

// Bytes of a Q8Rows for n_tokens rows of cols, and its layout inside `base`.
inline size_t q8_rows_bytes(int64_t n_tokens, int64_t cols) {
  const size_t n = size_t(n_tokens) * size_t(cols);
  return (n + 255) / 256 * 256 + 2 * (n / kQ8Chunk) * sizeof(float);
}

inline Q8Rows q8_rows_at(void* base, int64_t n_tokens, int64_t cols) {
  const size_t n = size_t(n_tokens) * size_t(cols);
  auto* bytes = static_cast<uint8_t*>(base);
  float* d = reinterpret_cast<float*>(bytes + (n + 255) / 256 * 256);
  return {reinterpret_cast<int8_t*>(bytes), d, d + n / kQ8Chunk};
}

// The activation format the CPU multiplies `weight_type` against (kQ8_0,
// kQ8_1 or kQ8_K), or kF32 when activations stay in floating point.
constexpr DType q8_activation_type(DType weight_type) {
  switch (weight_type) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0: return DType::kQ8_0;
    case DType::kQ4_1: return DType::kQ8_1;
    case DType::kQ4_K:
    case DType::kQ6_K: return DType::kQ8_K;
    default: return DType::kF32;
  }
}

}  // namespace tessera
