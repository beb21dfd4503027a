#pragma once
// The contract between the engine and a compute device. A backend is a
// device, an allocator, a stream and a table of kernels; `supports()` is asked
// at model load, never mid-request. Kernels take pointers and shapes only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/tensor/device.h"
#include "engine/tensor/dtype.h"

namespace tessera {

enum class Op : uint8_t { kDequantize };

std::string_view op_name(Op op);

class Stream {
 public:
  virtual ~Stream() = default;
  // Blocks until every kernel queued on the stream has finished.
  virtual void synchronize() = 0;
};

// Expands `n_elems` elements of `src_dtype` at `src` into f32 at `dst`; both
// pointers are device memory of the backend that runs it.
struct DequantizeArgs {
  const void* src;
  DType src_dtype;
  float* dst;
  int64_t n_elems;
};

struct KernelTable {
  void (*dequantize)(const DequantizeArgs& args, Stream& stream) = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  // Human-readable description: model, memory, instruction sets.
  virtual std::string describe() const = 0;

  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) = 0;

  virtual Stream& default_stream() = 0;
  virtual bool supports(Op op, DType dtype) const = 0;
  virtual const KernelTable& kernels() const = 0;
};

// Device memory owned through the backend that allocated it.
class DeviceBuffer {
 public:
  DeviceBuffer(Backend& backend, size_t bytes);
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data_); }
  size_t size() const { return size_; }

 private:
  Backend& backend_;
  void* data_;
  size_t size_;
};

}  // namespace tessera
