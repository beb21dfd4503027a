#include "models/decoder_weights.h"

#include <cstring>

#include "engine/error.h"
#include "kernels/cpu/dequantize.h"

namespace tessera {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const TensorSource& source, const cpu::IsaFeatures& isa, DecoderWeights& out) : source_(source), isa_(isa), out_(out) {}

  std::optional<SourceTensor> find(const std::string& name) const { return name.empty() ? std::nullopt : source_.find(name); }

  SourceTensor require(const std::string& name, const std::vector<int64_t>& shape) const {
    const auto t = find(name);
    if (!t) throw Error(source_.name() + ": tensor '" + name + "' is missing");
    if (t->shape != shape) {
      throw Error(source_.name() + ": tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected " + shape_text(shape));
    }
    return *t;
  }

  // A vector as f32: in place when stored as f32, else converted once.
  const float* vector(const std::string& name, int64_t n, bool required) {
    if (!required && !find(name)) return nullptr;
    const SourceTensor t = require(name, {n});
    if (t.dtype == DType::kF32) return static_cast<const float*>(t.data);
    return converted(name, t);
  }

  std::unique_ptr<cpu::LinearWeight> matrix(const std::string& name, int64_t rows, int64_t cols) {
    const SourceTensor t = require(name, {rows, cols});
    if (t.dtype == DType::kBF16 || cpu::select_vec_dot(t.dtype, isa_).fn) {
      return std::make_unique<cpu::LinearWeight>(name, t.dtype, t.data, rows, cols, isa_);
    }
    return std::make_unique<cpu::LinearWeight>(name, DType::kF32, converted(name, t), rows, cols, isa_);
  }

 private:
  const float* converted(const std::string& name, const SourceTensor& t) {
    if (!cpu::can_dequantize(t.dtype)) {
      throw Error(source_.name() + ": tensor '" + name + "': format " + std::string(dtype_name(t.dtype)) + " is not supported");
    }
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<uint8_t>& buf = out_.owned.emplace_back(size_t(n) * sizeof(float));
    cpu::dequantize_row(t.dtype, t.data, reinterpret_cast<float*>(buf.data()), n);
    return reinterpret_cast<const float*>(buf.data());
  }

  const TensorSource& source_;
  const cpu::IsaFeatures& isa_;
  DecoderWeights& out_;
};

void bind_layer(const DecoderSpec& spec, const WeightNames& names, int l, Binder& b, LayerWeights& layer) {
  const int64_t d = spec.d_model, q_dim = int64_t(spec.n_heads) * spec.head_dim, kv_dim = int64_t(spec.n_kv_heads) * spec.head_dim;
  auto name = [l](const std::string& pattern) { return pattern.empty() ? pattern : layer_name(pattern, l); };
  layer.attn_norm = b.vector(name(names.attn_norm), d, true);
  layer.q = b.matrix(name(names.q), q_dim, d);
  layer.k = b.matrix(name(names.k), kv_dim, d);
  layer.v = b.matrix(name(names.v), kv_dim, d);
  layer.o = b.matrix(name(names.o), d, q_dim);
  if (spec.qkv_bias) {
    layer.q_bias = b.vector(name(names.q_bias), q_dim, true);
    layer.k_bias = b.vector(name(names.k_bias), kv_dim, true);
    layer.v_bias = b.vector(name(names.v_bias), kv_dim, true);
  }
  if (spec.qk_norm) {
    layer.q_norm = b.vector(name(names.q_norm), spec.head_dim, true);
    layer.k_norm = b.vector(name(names.k_norm), spec.head_dim, true);
  }
  if (spec.post_attention_norm) layer.post_attn_norm = b.vector(name(names.post_attn_norm), d, true);
  layer.ffn_norm = b.vector(name(names.ffn_norm), d, true);
  layer.gate = b.matrix(name(names.gate), spec.ffn_dim, d);
  layer.up = b.matrix(name(names.up), spec.ffn_dim, d);
  layer.down = b.matrix(name(names.down), d, spec.ffn_dim);
  if (spec.post_ffn_norm) layer.post_ffn_norm = b.vector(name(names.post_ffn_norm), d, true);
}

}  // namespace

std::unique_ptr<DecoderWeights> bind_weights(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                             const cpu::IsaFeatures& isa) {
  auto weights = std::make_unique<DecoderWeights>();
  Binder b(source, isa, *weights);
  const SourceTensor embedding = b.require(names.token_embedding, {spec.vocab_size, spec.d_model});
  if (!cpu::can_dequantize(embedding.dtype)) {
    throw Error(source.name() + ": tensor '" + names.token_embedding + "': format " + std::string(dtype_name(embedding.dtype)) +
                " is not supported");
  }
  weights->token_embedding = {embedding.dtype, embedding.data, spec.vocab_size, spec.d_model};
  weights->output_norm = b.vector(names.output_norm, spec.d_model, true);
  if (!spec.tied_embeddings && b.find(names.output)) {
    weights->output = b.matrix(names.output, spec.vocab_size, spec.d_model);
  } else {
    weights->output = b.matrix(names.token_embedding, spec.vocab_size, spec.d_model);
  }
  weights->layers.resize(size_t(spec.n_layers));
  for (int l = 0; l < spec.n_layers; ++l) bind_layer(spec, names, l, b, weights->layers[size_t(l)]);
  return weights;
}

}  // namespace tessera
