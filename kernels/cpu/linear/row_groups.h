#pragma once
// Q4_0, Q5_0 and Q8_0 weights copied at load into groups of 16 rows for
// prompt-sized products. Within a group, each 32-element block becomes
// eight chunks of 16 rows × 4 values, so one 512-bit register holds the
// same four values of 16 rows: a VNNI instruction multiplies them by four
// values of one token (broadcast from memory) and leaves, lane by lane,
// exactly the four-value sums the one-row kernels form. The float work is
// then one conversion and one multiply-add per 16 lane sums, with no lane
// holding a value another lane repeats.
//
// The values are widened to unsigned bytes q + offset, so the copy takes
// 1.125 bytes a weight beside the GGUF blocks, which stay for the one-token
// products. The offset is the kernel table's: 128 for VNNI, whose four-value
// sums cannot saturate; 16 for AVX2, whose multiply-add saturates 16-bit
// pairs, which (q + 16) · y keeps below (31 · 127 · 2) where (q + 128) · y
// would not. Q8_0's values need 128, so AVX2 keeps no copy of them.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/tensor/dtype.h"
#include "quant/gguf_blocks.h"

namespace tessera::cpu {

constexpr int kGroupRows = 16;

// One block (32 elements) of 16 rows.
struct alignas(64) RowGroupBlock {
  uint8_t q[8][64];  // [chunk i][row k: elements 4i..4i+3 as q + offset]
  float d[kGroupRows];  // each row's block scale (0 for the rows padding the last group)
};

// One block of one token's Q8_0 activations, laid out for the row-group
// kernels: the values and, per four of them, the bias −offset · Σ that takes
// the weights' offset back off. The block scale is kept apart, as f32.
struct alignas(64) TokenBlock {
  int8_t qs[kQK];
  int32_t bias[8];
};

class RowGroups {
 public:
  // The row-group copy of `rows` rows of `cols` elements of `dtype` (Q4_0,
  // Q5_0 or Q8_0), each value stored as q + offset; nullopt for any other
  // format, or where the format's values do not fit bytes at that offset.
  static std::optional<RowGroups> repack(DType dtype, const void* data, int64_t rows, int64_t cols, int offset);

  int64_t blocks() const { return blocks_; }  // per row
  int offset() const { return offset_; }
  // Group g's blocks, [blocks()].
  const RowGroupBlock* group(int64_t g) const { return data_.data() + g * blocks_; }
  size_t bytes() const { return data_.size() * sizeof(RowGroupBlock); }

 private:
  RowGroups(int64_t groups, int64_t blocks, int offset) : blocks_(blocks), offset_(offset), data_(size_t(groups * blocks)) {}
  int64_t blocks_;
  int offset_;
  std::vector<RowGroupBlock> data_;
};

// One Q8_0 activation row as `blocks` TokenBlocks (biased for weights
// stored at `offset`) and their scales.
void pack_token_blocks(const BlockQ8_0* row, int64_t blocks, int offset, TokenBlock* out, float* scales);

}  // namespace tessera::cpu
