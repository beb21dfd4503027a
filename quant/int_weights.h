#pragma once
// Integer weights with separate scales: the one layout every scheme of this
// folder (A16W8, A16W4, DA8W8) and every reader of published quantized
// checkpoints produces, and that backends repack from.
//
//   8 bits: int8 q, symmetric, w = scale * q, q in [-127, 127].
//   4 bits: signed nibbles, two per byte, low nibble first (DType::kInt4),
//           w = scale * (q - zero), q and zero in [-8, 7]; zero is 0 when
//           the scheme is symmetric (no zero-point tensor).
//   scales: f32 (rows, n_groups); zeros: int8 (rows, n_groups).
// A group covers `group_size` consecutive columns of a row; the last group
// of a row may be shorter (576 columns in groups of 128: 4 full, one of 64).
// Per-channel scaling is one group the width of the row.
#include <cstdint>
#include <string>
#include <vector>

#include "quant/weight_scheme.h"

namespace tessera::quant {

// How a 4-bit asymmetric group's scale and zero point are chosen. kMinMax
// spans the group's range. The fits try steps of range / (15 ± k/3), each
// with its nearest zero point and then the scale refit by weighted least
// squares, and keep the code of least weighted squared error: weighted by
// w² (kMagnitude: the large weights, which carry most of the product, stay
// close; data-free), or by each input's mean square on calibration text
// (kActivation: the diagonal of the product's error), or by both, w² times
// the input's mean square (kProduct: each term of the product's size).
// 8-bit and symmetric weights are always kMinMax.
enum class RangeFit : uint8_t { kMinMax, kMagnitude, kActivation, kProduct };

struct IntQuantConfig {
  int bits = 8;            // 8 or 4
  int64_t group_size = 0;  // columns per scale; 0: one per output channel
  bool symmetric = true;   // 4 bits only; 8 bits is always symmetric
  ActivationPolicy activation = ActivationPolicy::kNone;
  float clip = 1.0f;  // each group's range shrunk to this fraction (activation-aware search)
  std::vector<float> row_clips{};  // when set, (rows): each output channel's own fraction instead
  RangeFit range_fit = RangeFit::kMagnitude;
  std::vector<RangeFit> row_fits{};        // when set, (rows): each output channel's own fit instead
  std::vector<float> column_importance{};  // (cols): each input's mean square, for kActivation and kProduct
};

inline int64_t group_count(int64_t cols, int64_t group_size) { return (cols + group_size - 1) / group_size; }

// A quantized matrix that owns its tensors.
struct IntMatrix {
  WeightScheme scheme;  // storage kI8 or kInt4, group_size set, scale_dtype kF32
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> data;  // (rows, cols) int8, or (rows, cols / 2) nibbles
  std::vector<float> scales;  // (rows, n_groups)
  std::vector<int8_t> zeros;  // (rows, n_groups) when scheme.has_zero_points
  int64_t n_groups() const { return group_count(cols, scheme.group_size); }
  // A view the backends prepare; valid while this matrix lives.
  QuantizedLinear view(std::string name) const;
};

// Throws tessera::Error naming `name` when the configuration cannot hold
// this shape (bits, group size not a multiple of 32, odd columns for 4 bits).
WeightScheme int_scheme(const std::string& name, const IntQuantConfig& config, int64_t cols);

// Round-to-nearest quantization of an f32 (rows, cols) matrix, row by row.
// `column_scale`, when given (cols), multiplies each column first (AWQ's
// activation-aware scaling; the caller divides the activations by it).
// Large matrices split their rows over `threads` threads (0: one per core);
// the result does not depend on how many.
IntMatrix quantize_rtn(const std::string& name, const float* w, int64_t rows, int64_t cols,
                       const IntQuantConfig& config, const float* column_scale = nullptr, int threads = 0);

// Row `row` of an integer linear back to f32: the reference every kernel and
// reader is tested against.
void dequantize_int_row(const QuantizedLinear& w, int64_t row, float* out);

// Checks that `w` is an integer linear this layout describes (storage,
// group size, tensors present); throws tessera::Error naming it.
void validate_int_linear(const QuantizedLinear& w);

// Element `col` of a row of signed nibbles (low nibble first), and setting it
// to q in [-8, 7].
int int4_at(const uint8_t* row, int64_t col);
void set_int4(uint8_t* row, int64_t col, int q);
// The first `cols` elements of such a row, each plus `offset` (8 gives the
// unsigned nibble), into out: a whole row at once, where int4_at goes
// element by element.
void int4_row(const uint8_t* row, int64_t cols, int offset, int8_t* out);

// True for schemes in this layout (int8 or int4 with separate scales).
bool is_int_scheme(const WeightScheme& scheme);

}  // namespace tessera::quant
