#include "engine/tensor/tensor.h"

#include <string_view>
#include <utility>

#include "engine/core/error.h"

namespace tessera {

TensorView::TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device)
    : TensorView(data, dtype, shape.begin(), int(shape.size()), device) {}

TensorView::TensorView(void* data, DType dtype, const int64_t* shape, int ndim, Device device)
    : data_(data), dtype_(dtype), device_(device), ndim_(ndim) {
  if (ndim < 0 || ndim > kMaxDims) throw Error("tensor: " + std::to_string(ndim) + " dimensions (at most 4)");
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) throw Error("tensor: negative dimension " + std::to_string(shape[i]));
    shape_[i] = shape[i];
  }
  if (ndim > 0 && shape_[ndim - 1] % dtype_info(dtype).block_elems != 0) {
    throw Error("tensor: innermost dimension " + std::to_string(shape_[ndim - 1]) +
                " is not a whole number of " + std::string(dtype_name(dtype)) + " blocks");
  }
  set_contiguous_strides();
}

void TensorView::set_contiguous_strides() {
  int64_t stride = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    strides_[i] = stride;
    stride *= shape_[i];
  }
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

uint64_t TensorView::nbytes() const { return dtype_bytes(dtype_, uint64_t(numel())).value_or(0); }

TensorView TensorView::slice_rows(int64_t begin, int64_t end) const {
  if (ndim_ == 0 || begin < 0 || end < begin || end > shape_[0]) {
    throw Error("tensor: row slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") outside " + shape_string());
  }
  TensorView out = *this;
  const uint64_t offset = dtype_bytes(dtype_, uint64_t(begin * strides_[0])).value_or(0);
  out.data_ = static_cast<char*>(data_) + offset;
  out.shape_[0] = end - begin;
  return out;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + "]";
}

}  // namespace tessera
