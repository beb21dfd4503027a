#include "kernels/cpu/linear/row_groups.h"

#include <cstring>

#include "engine/tensor/half.h"

namespace tessera::cpu {
namespace {

// One block's 32 signed values, in element order, and its scale.
struct BlockValues {
  int8_t q[kQK];
  uint16_t d;
};

BlockValues values_of(const BlockQ4_0& b) {
  BlockValues v{};
  for (int i = 0; i < kQK / 2; ++i) {
    v.q[i] = int8_t((b.qs[i] & 0x0f) - 8);
    v.q[i + kQK / 2] = int8_t((b.qs[i] >> 4) - 8);
  }
  v.d = b.d;
  return v;
}

BlockValues values_of(const BlockQ5_0& b) {
  uint32_t high;
  std::memcpy(&high, b.qh, sizeof high);
  BlockValues v{};
  for (int i = 0; i < kQK / 2; ++i) {
    v.q[i] = int8_t(((b.qs[i] & 0x0f) | (((high >> i) & 1) << 4)) - 16);
    v.q[i + kQK / 2] = int8_t(((b.qs[i] >> 4) | (((high >> (i + kQK / 2)) & 1) << 4)) - 16);
  }
  v.d = b.d;
  return v;
}

BlockValues values_of(const BlockQ8_0& b) {
  BlockValues v{};
  std::memcpy(v.q, b.qs, kQK);
  v.d = b.d;
  return v;
}

// Row k of `out` takes `v`.
void place_row(const BlockValues& v, int k, int offset, RowGroupBlock& out) {
  for (int e = 0; e < kQK; ++e) out.q[e / 4][k * 4 + e % 4] = uint8_t(int(v.q[e]) + offset);
  out.d[k] = f16_to_f32(v.d);
}

// A padding row: values 0, scale 0.
void place_empty_row(int k, int offset, RowGroupBlock& out) {
  for (int e = 0; e < kQK; ++e) out.q[e / 4][k * 4 + e % 4] = uint8_t(offset);
  out.d[k] = 0.0f;
}

// The least offset that makes every value of `dtype` a byte 0..255.
int least_offset(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0: return 8;
    case DType::kQ5_0: return 16;
    default: return 128;
  }
}

template <class Block>
void fill(const void* data, int64_t rows, int64_t blocks, int offset, RowGroupBlock* out) {
  const auto* w = static_cast<const Block*>(data);
  const int64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t b = 0; b < blocks; ++b) {
      RowGroupBlock& o = out[g * blocks + b];
      for (int k = 0; k < kGroupRows; ++k) {
        const int64_t r = g * kGroupRows + k;
        if (r < rows) {
          place_row(values_of(w[r * blocks + b]), k, offset, o);
        } else {
          place_empty_row(k, offset, o);
        }
      }
    }
  }
}

}  // namespace

std::optional<RowGroups> RowGroups::repack(DType dtype, const void* data, int64_t rows, int64_t cols, int offset) {
  if (dtype != DType::kQ4_0 && dtype != DType::kQ5_0 && dtype != DType::kQ8_0) return std::nullopt;
  if (rows <= 0 || cols <= 0 || cols % kQK != 0) return std::nullopt;
  // Past 128, the largest value (127) would no longer be a byte.
  if (offset < least_offset(dtype) || offset > 128) return std::nullopt;
  const int64_t blocks = cols / kQK, groups = (rows + kGroupRows - 1) / kGroupRows;
  RowGroups out(groups, blocks, offset);
  switch (dtype) {
    case DType::kQ4_0: fill<BlockQ4_0>(data, rows, blocks, offset, out.data_.data()); break;
    case DType::kQ5_0: fill<BlockQ5_0>(data, rows, blocks, offset, out.data_.data()); break;
    default: fill<BlockQ8_0>(data, rows, blocks, offset, out.data_.data()); break;
  }
  return out;
}

void pack_token_blocks(const BlockQ8_0* row, int64_t blocks, int offset, TokenBlock* out, float* scales) {
  for (int64_t b = 0; b < blocks; ++b) {
    std::memcpy(out[b].qs, row[b].qs, kQK);
    for (int i = 0; i < 8; ++i) {
      const int8_t* q = row[b].qs + 4 * i;
      out[b].bias[i] = -offset * (int32_t(q[0]) + q[1] + q[2] + q[3]);
    }
    scales[b] = f16_to_f32(row[b].d);
  }
}

}  // namespace tessera::cpu
