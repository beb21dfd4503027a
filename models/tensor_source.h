#pragma once
// Named tensors from a checkpoint, in row-major order, whatever the format.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/tensor/dtype.h"

namespace tessera {

namespace gguf {
class File;
}
namespace hf {
class ModelDir;
}

struct SourceTensor {
  DType dtype;
  const void* data;
  std::vector<int64_t> shape;  // row-major: shape.back() is contiguous
  uint64_t n_bytes;
};

// The tensor's values as f32, from any format the reference dequantiser
// reads (floats and GGUF blocks). Throws tessera::Error naming `name` otherwise.
std::vector<float> tensor_as_f32(const std::string& name, const SourceTensor& t);

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual std::optional<SourceTensor> find(const std::string& name) const = 0;
  virtual const std::string& name() const = 0;
  // Every tensor the checkpoint holds, in file order.
  virtual std::vector<std::string> names() const = 0;
};

class GgufTensorSource final : public TensorSource {
 public:
  explicit GgufTensorSource(const gguf::File& file) : file_(file) {}
  std::optional<SourceTensor> find(const std::string& name) const override;
  const std::string& name() const override;
  std::vector<std::string> names() const override;

 private:
  const gguf::File& file_;
};

class HfTensorSource final : public TensorSource {
 public:
  explicit HfTensorSource(const hf::ModelDir& dir) : dir_(dir) {}
  std::optional<SourceTensor> find(const std::string& name) const override;
  const std::string& name() const override;
  std::vector<std::string> names() const override;

 private:
  const hf::ModelDir& dir_;
};

}  // namespace tessera
