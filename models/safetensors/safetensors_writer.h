#pragma once
// Writes a safetensors file: an 8-byte little-endian header length, the JSON
// header (padded with spaces to 8 bytes) and the tensors' bytes in the order
// they were added. The file appears under its name only once it is
// complete (written beside it, then renamed).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor/dtype.h"

namespace tessera::safetensors {

class Writer {
 public:
  // `data` must stay valid until write(); `bytes` must match dtype and shape.
  // Throws tessera::Error for a repeated name or a size mismatch.
  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data, uint64_t bytes);
  // Throws tessera::Error naming the path when it cannot be written.
  void write(const std::string& path, const std::map<std::string, std::string>& metadata = {}) const;
  uint64_t total_bytes() const { return total_; }

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    const void* data;
    uint64_t bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
  uint64_t total_ = 0;
};

}  // namespace tessera::safetensors
