#pragma once
// A non-owning view of tensor memory: pointer, dtype, device, shape and
// strides. Strides count elements. For block-quantised dtypes the innermost
// dimension must be contiguous and a whole number of blocks; byte offsets of
// outer dimensions are derived from element counts.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "engine/tensor/device.h"
#include "engine/tensor/dtype.h"

namespace tessera {

constexpr int kMaxDims = 4;

class TensorView {
 public:
  TensorView() = default;
  // A contiguous row-major view.
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device = {});
  TensorView(void* data, DType dtype, const int64_t* shape, int ndim, Device device = {});

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  DType dtype() const { return dtype_; }
  const Device& device() const { return device_; }
  int ndim() const { return ndim_; }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t stride(int i) const { return strides_[i]; }
  int64_t numel() const;
  bool is_contiguous() const;
  // Bytes spanned by a contiguous view.
  uint64_t nbytes() const;
  // A view of rows [begin, end) along dimension 0.
  TensorView slice_rows(int64_t begin, int64_t end) const;
  std::string shape_string() const;

 private:
  void set_contiguous_strides();

  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  Device device_{};
  int ndim_ = 0;
  std::array<int64_t, kMaxDims> shape_{};
  std::array<int64_t, kMaxDims> strides_{};
};

}  // namespace tessera
