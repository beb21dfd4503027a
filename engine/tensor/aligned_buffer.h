#pragma once
// Owning, 64-byte-aligned host memory for tensors and workspaces.
#include <cstddef>
#include <memory>

namespace tessera {

constexpr size_t kHostAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);

  void* data() const { return data_.get(); }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_.get()); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

}  // namespace tessera
