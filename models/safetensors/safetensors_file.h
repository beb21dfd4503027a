#pragma once
// A validated safetensors file: a JSON header of tensor entries followed by
// the raw bytes, used in place from a memory mapping. Every bound is checked
// on open; a bad file throws tessera::Error naming the file, the tensor and
// the fault.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/mapped_file.h"
#include "engine/tensor/dtype.h"

namespace tessera::safetensors {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kMaxDims = 8;
constexpr int kMaxJsonDepth = 8;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, as written
  uint64_t begin = 0;          // byte range inside the data section
  uint64_t end = 0;
};

class File {
 public:
  static File open(const std::string& path);
  // Validates caller-owned bytes, which must outlive the File.
  static File parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_bytes(const TensorInfo& tensor) const;

 private:
  friend class HeaderParser;
  File() = default;

  MappedFile mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint64_t data_offset_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;
};

// The safetensors dtype names ("F16", "BF16", "I8", …); nullopt otherwise.
std::optional<DType> dtype_from_safetensors(std::string_view name);

}  // namespace tessera::safetensors
