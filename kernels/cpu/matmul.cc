#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"
#include "kernels/cpu/quantize_rows.h"

namespace tessera::cpu {

LinearWeight::LinearWeight(std::string name, DType dtype, const void* data, int64_t rows, int64_t cols,
                           const IsaFeatures& isa)
    : name_(std::move(name)), dtype_(dtype), data_(static_cast<const uint8_t*>(data)), rows_(rows), cols_(cols) {
  if (dtype == DType::kBF16) {
    // bf16 goes to oneDNN only; the row geometry below is that of f32 activations.
    row_bytes_ = size_t(cols) * 2;
    act_row_bytes_ = size_t(cols) * sizeof(float);
    kernel_ = {DType::kF32, nullptr};
    dense_ = std::make_shared<OnednnMatmul>(data, true, rows, cols);
    return;
  }
  kernel_ = select_vec_dot(dtype, isa);
  if (!kernel_.fn) throw Error("weight '" + name_ + "': no CPU matmul kernel for " + std::string(dtype_name(dtype)));
  const auto row_bytes = dtype_bytes(dtype, uint64_t(cols));
  const auto act_bytes = dtype_bytes(kernel_.activation_type, uint64_t(cols));
  if (!row_bytes || !act_bytes) {
    throw Error("weight '" + name_ + "': row of " + std::to_string(cols) + " is not a whole number of " +
                std::string(dtype_name(dtype)) + " blocks");
  }
  row_bytes_ = *row_bytes;
  act_row_bytes_ = *act_bytes;
  if (dtype == DType::kF32) dense_ = std::make_shared<OnednnMatmul>(data, false, rows, cols);
}

void convert_activation_row(DType type, const float* x, void* out, int64_t n) {
  switch (type) {
    case DType::kF32: std::memcpy(out, x, size_t(n) * sizeof(float)); return;
    case DType::kF16: convert_row_f16(x, static_cast<uint16_t*>(out), n); return;
    case DType::kQ8_0: quantize_row_q8_0(x, static_cast<BlockQ8_0*>(out), n); return;
    case DType::kQ8_1: quantize_row_q8_1(x, static_cast<BlockQ8_1*>(out), n); return;
    case DType::kQ8_K: quantize_row_q8_k(x, static_cast<BlockQ8_K*>(out), n); return;
    default: throw Error("matmul: no activation conversion to " + std::string(dtype_name(type)));
  }
}

void matmul(const LinearWeight& w, const float* x, int64_t n_tokens, float* y, MatmulScratch& scratch, ThreadPool& pool) {
  if (w.dense()) {
    w.dense()->run(x, n_tokens, y);
    return;
  }
  const int64_t cols = w.cols(), rows = w.rows();
  const size_t act_bytes = w.activation_row_bytes();
  if (scratch.activations.size() < act_bytes * size_t(n_tokens)) scratch.activations.resize(act_bytes * size_t(n_tokens));
  uint8_t* acts = scratch.activations.data();
  const DType act_type = w.kernel().activation_type;
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) convert_activation_row(act_type, x + m * cols, acts + size_t(m) * act_bytes, cols);
  });
  const VecDotFn dot = w.kernel().fn;
  const VecDot4Fn dot4 = w.kernel().fn4;
  constexpr int64_t kRowTile = 16;  // weight rows reused across all tokens while in cache
  pool.parallel_for((rows + kRowTile - 1) / kRowTile, 1, [&](int, int64_t tile_begin, int64_t tile_end) {
    for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
      const int64_t r0 = tile * kRowTile, r1 = std::min(rows, r0 + kRowTile);
      int64_t m = 0;
      for (; dot4 && m + 4 <= n_tokens; m += 4) {
        const void* four[4];
        for (int j = 0; j < 4; ++j) four[j] = acts + size_t(m + j) * act_bytes;
        float out[4];
        for (int64_t r = r0; r < r1; ++r) {
          dot4(cols, w.row(r), four, out);
          for (int j = 0; j < 4; ++j) y[(m + j) * rows + r] = out[j];
        }
      }
      for (; m < n_tokens; ++m) {
        const uint8_t* act = acts + size_t(m) * act_bytes;
        float* out = y + m * rows;
        for (int64_t r = r0; r < r1; ++r) out[r] = dot(cols, w.row(r), act);
      }
    }
  });
}

}  // namespace tessera::cpu
