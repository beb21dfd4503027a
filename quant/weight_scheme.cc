#include "quant/weight_scheme.h"

#include "engine/core/error.h"

namespace tessera {

std::string WeightScheme::describe() const {
  std::string s(dtype_name(storage));
  if (!scales_in_blocks && group_size > 0) s += "/g" + std::to_string(group_size);
  if (has_zero_points) s += "+zp";
  if (activation == ActivationPolicy::kDynamicInt8Token) s += ", activations int8 per token";
  return s;
}

WeightScheme scheme_for_dtype(DType dtype) {
  WeightScheme s;
  s.storage = dtype;
  const DTypeInfo& info = dtype_info(dtype);
  if (info.quantized) {
    s.group_size = int(info.block_elems);
    s.scales_in_blocks = true;
  }
  return s;
}

QuantizedLinear QuantizedLinear::row_slice(std::string part_name, int64_t first, int64_t count) const {
  if (first < 0 || count <= 0 || first + count > rows) {
    throw Error("weight '" + name + "': rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") outside its " + std::to_string(rows) + " rows");
  }
  if ((scales || zero_points) && (scheme.scale_dtype != DType::kF32 || scheme.group_size <= 0)) {
    throw Error("weight '" + name + "': only f32 scales with a group size can be sliced");
  }
  QuantizedLinear part = *this;
  part.name = std::move(part_name);
  part.rows = count;
  part.data = static_cast<const uint8_t*>(data) + uint64_t(first) * row_stride;
  if (scales) {
    const int64_t groups = (cols + scheme.group_size - 1) / scheme.group_size;
    part.scales = static_cast<const float*>(scales) + first * groups;
    if (zero_points) part.zero_points = static_cast<const int8_t*>(zero_points) + first * groups;
  }
  if (bias) part.bias = bias + first;
  return part;
}

QuantizedLinear linear_from_tensor(std::string name, DType dtype, const void* data, int64_t rows, int64_t cols) {
  const auto row_bytes = dtype_bytes(dtype, uint64_t(cols));
  if (!row_bytes || rows <= 0 || cols <= 0) {
    throw Error("weight '" + name + "': a row of " + std::to_string(cols) + " is not a whole number of " +
                std::string(dtype_name(dtype)) + " blocks");
  }
  QuantizedLinear w;
  w.name = std::move(name);
  w.scheme = scheme_for_dtype(dtype);
  w.rows = rows;
  w.cols = cols;
  w.data = data;
  w.row_stride = *row_bytes;
  return w;
}

}  // namespace tessera
