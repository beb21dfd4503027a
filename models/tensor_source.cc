#include "models/tensor_source.h"

#include <algorithm>

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"
#include "models/hf/hf_model_dir.h"
#include "quant/dequantize.h"

namespace tessera {

std::vector<float> tensor_as_f32(const std::string& name, const SourceTensor& t) {
  if (!can_dequantize(t.dtype)) throw Error("tensor '" + name + "': format " + std::string(dtype_name(t.dtype)) + " is not supported");
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t.dtype, t.data, v.data(), n);
  return v;
}

std::optional<SourceTensor> GgufTensorSource::find(const std::string& name) const {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (!t) return std::nullopt;
  std::vector<int64_t> shape(t->shape.rbegin(), t->shape.rend());  // GGUF lists the contiguous dimension first
  return SourceTensor{t->dtype, file_.tensor_bytes(*t).data(), std::move(shape), t->n_bytes};
}

const std::string& GgufTensorSource::name() const { return file_.name(); }

std::vector<std::string> GgufTensorSource::names() const {
  std::vector<std::string> out;
  for (const gguf::TensorInfo& t : file_.tensors()) out.push_back(t.name);
  return out;
}

std::optional<SourceTensor> HfTensorSource::find(const std::string& name) const {
  const auto ref = dir_.find_weight(name);
  if (!ref) return std::nullopt;
  const auto bytes = ref->file->tensor_bytes(*ref->tensor);
  return SourceTensor{ref->tensor->dtype, bytes.data(), ref->tensor->shape, bytes.size()};
}

const std::string& HfTensorSource::name() const { return dir_.path(); }

std::vector<std::string> HfTensorSource::names() const {
  std::vector<std::string> out;
  for (const auto& shard : dir_.shards()) {
    for (const safetensors::TensorInfo& t : shard->tensors()) out.push_back(t.name);
  }
  return out;
}

}  // namespace tessera
