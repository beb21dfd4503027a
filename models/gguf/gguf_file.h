#pragma once
// A validated GGUF v2/v3 file: metadata, tensor infos and the tensor bytes,
// used in place from a memory mapping. Every bound is checked on open; a bad
// file throws tessera::Error naming the file, the key or tensor, and the fault.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/mapped_file.h"
#include "engine/tensor/dtype.h"
#include "models/gguf/gguf_value.h"

namespace tessera::gguf {

constexpr uint64_t kMaxStringBytes = 64ull << 20;   // one metadata string
constexpr uint64_t kMaxArrayElements = 64ull << 20; // one metadata array
constexpr uint32_t kMaxArrayNesting = 4;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxAlignment = 1ull << 20;
constexpr uint64_t kDefaultAlignment = 32;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // GGUF order: shape[0] is the contiguous dimension
  uint64_t offset = 0;         // from the start of the data section
  uint64_t n_elems = 0;
  uint64_t n_bytes = 0;
};

class File {
 public:
  // Maps and validates `path`.
  static File open(const std::string& path);
  // Validates bytes owned by the caller, who keeps them alive; `name` is used
  // in error messages.
  static File parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  // Typed lookups: nullopt when absent; Error when present with another type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const Array* get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_bytes(const TensorInfo& tensor) const;

 private:
  friend class Parser;
  File() = default;
  [[noreturn]] void fail_key(std::string_view key, const std::string& what) const;

  MappedFile mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace tessera::gguf
