#pragma once
// A linear layer's weight as a scheme plus its tensors, independent of any
// device: how the values are stored (element or block format, group size),
// where the scales and zero points live when the format keeps them apart,
// and what the activations become before the product. The GGUF block
// formats are schemes whose scales sit inside each block. A backend turns a
// QuantizedLinear into its own prepared form once, at load.
#include <cstdint>
#include <string>

#include "engine/tensor/dtype.h"

namespace tessera {

enum class ActivationPolicy : uint8_t {
  kNone,              // activations stay in floating point
  kDynamicInt8Token,  // quantised to int8 per token at run time (DA8W8)
};

struct WeightScheme {
  DType storage = DType::kF32;  // element or block format of the stored values
  int group_size = 0;           // elements sharing one scale; the block size for block formats; 0: none
  bool scales_in_blocks = false;  // each block carries its own scale (GGUF formats)
  DType scale_dtype = DType::kF32;  // separate scale tensor's type, when `scales` is set
  bool has_zero_points = false;
  ActivationPolicy activation = ActivationPolicy::kNone;

  // "q4_k", "bf16", "int8/g128+zp, act int8/token" …
  std::string describe() const;
};

// The scheme of a tensor stored in one of the element or GGUF block formats.
WeightScheme scheme_for_dtype(DType dtype);

struct QuantizedLinear {
  std::string name;            // checkpoint tensor name, for messages
  WeightScheme scheme;
  int64_t rows = 0;            // output features
  int64_t cols = 0;            // input features
  const void* data = nullptr;  // (rows, cols) in scheme.storage, row-major; host memory of the checkpoint
  uint64_t row_stride = 0;     // bytes from one row to the next
  const void* scales = nullptr;       // (rows, cols / group_size) when not in the blocks
  const void* zero_points = nullptr;  // the same shape, when has_zero_points
  const float* bias = nullptr;        // (rows), or null
  // (cols), or null: stored column c multiplies input channel input_order[c]
  // (GPTQ's act-order checkpoints, regrouped so each group is contiguous).
  const int32_t* input_order = nullptr;
  // Multiplied by whole prompts, so worth a layout of its own for them;
  // false for the output head, which takes one row per sequence.
  bool multiplies_prompts = true;
  // `data` is a copy the loader made and keeps (a conversion, a repacking,
  // a rank's columns), not the checkpoint's own bytes: a backend that reads
  // weights from host memory reads it in place rather than copying it again.
  bool loader_owned = false;

  // Rows [first, first + count) as a linear of their own: a fused QKV or
  // gate-up matrix splits into its parts without copying.
  QuantizedLinear row_slice(std::string part_name, int64_t first, int64_t count) const;
};

// A QuantizedLinear over `rows` rows of `cols` elements of `dtype` at `data`.
// Throws tessera::Error naming `name` when a row is not whole blocks.
QuantizedLinear linear_from_tensor(std::string name, DType dtype, const void* data, int64_t rows, int64_t cols);

}  // namespace tessera
