#pragma once
// y = x · Wᵀ for a weight matrix stored in any supported format: the weight
// rows stay in place (mmap'd GGUF blocks included); activation rows are
// converted once per call to the format the weight's dot product expects.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/cpu/linear/onednn_matmul.h"
#include "kernels/cpu/runtime/thread_pool.h"
#include "kernels/cpu/linear/vec_dot.h"

namespace tessera::cpu {

class LinearWeight {
 public:
  // `data` holds `rows` rows of `cols` elements of `dtype`, row-major.
  // Throws tessera::Error naming `name` if the format is not supported.
  // `prompt_copy`: where the CPU has a kernel for it, also keep the rows in
  // the row-group layout (kernels/cpu/linear/row_groups.h) for products of whole
  // prompts; off for weights that only ever see a few rows at once.
  LinearWeight(std::string name, DType dtype, const void* data, int64_t rows, int64_t cols, const IsaFeatures& isa,
               bool prompt_copy = true);

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* row(int64_t r) const { return data_ + r * row_bytes_; }
  size_t row_bytes() const { return row_bytes_; }
  const VecDotKernel& kernel() const { return kernel_; }
  size_t activation_row_bytes() const { return act_row_bytes_; }
  // f32 weights go through oneDNN; null for the quantised formats.
  const OnednnMatmul* dense() const { return dense_.get(); }
  // The row-group copy, or null.
  const RowGroups* row_groups() const { return row_groups_.get(); }

 private:
  std::string name_;
  DType dtype_;
  const uint8_t* data_;
  int64_t rows_, cols_;
  size_t row_bytes_;
  VecDotKernel kernel_;
  size_t act_row_bytes_;
  std::shared_ptr<OnednnMatmul> dense_;
  std::shared_ptr<const RowGroups> row_groups_;
};

// Scratch memory reused across calls: converted activations and their block
// scales, one buffer per activation format in use.
struct MatmulScratch {
  std::vector<std::vector<uint8_t>> activations;
  std::vector<std::vector<float>> block_scales;
  std::vector<std::vector<Q8_0PairBlock>> pair_blocks;
  std::vector<std::vector<Q8_KPairBlock>> k_pair_blocks;
  std::vector<std::vector<TokenBlock>> token_blocks;
  std::vector<std::vector<float>> token_scales;
};

// y[m][r] = dot(x[m], W[r]) for m < n_tokens; x is [n_tokens][cols] f32,
// y is [n_tokens][rows] f32.
void matmul(const LinearWeight& w, const float* x, int64_t n_tokens, float* y, MatmulScratch& scratch, ThreadPool& pool);

// One weight of a group that reads the same input, and where its product goes.
struct MatmulOutput {
  const LinearWeight* weight;
  float* y;  // [n_tokens][weight->rows()]
};

// matmul() for several weights of the same input width (Q, K and V; gate
// and up): the input is converted once per activation format, and the rows
// of all the weights share one parallel loop. Each product is the one
// matmul() gives.
// At most kMaxSharedOutputs weights.
constexpr size_t kMaxSharedOutputs = 8;
void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens, MatmulScratch& scratch,
                         ThreadPool& pool);

// Converts one f32 row into `type` (an activation format) at `out`.
void convert_activation_row(DType type, const float* x, void* out, int64_t n);

}  // namespace tessera::cpu
