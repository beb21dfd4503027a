#include "models/gguf_spec.h"

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

// Llama 3.1+ GGUF files carry the rope scaling as a tensor of per-pair divisors.
void read_rope_freq_factors(const std::string& path, const TensorSource& source, DecoderSpec* spec) {
  const auto t = source.find("rope_freqs.weight");
  if (!t) return;
  if (t->dtype != DType::kF32 || t->shape != std::vector<int64_t>{spec->rope.dim / 2}) {
    throw Error(path + ": tensor 'rope_freqs.weight' must be F32 of " + std::to_string(spec->rope.dim / 2) + " elements");
  }
  const float* f = static_cast<const float*>(t->data);
  spec->rope.freq_factors.assign(f, f + spec->rope.dim / 2);
}

}  // namespace

DecoderSpec gguf_decoder_spec(const gguf::File& file, const Architecture& arch, const TensorSource& source) {
  DecoderSpec spec;
  arch.spec_from_gguf(file, &spec);
  // Biases are optional in llama.cpp's graphs: a file that has them uses them.
  const auto has = [&](const std::string& pattern) { return !pattern.empty() && source.find(layer_name(pattern, 0)); };
  spec.qkv_bias = spec.qkv_bias || has(arch.gguf_names.q_bias);
  spec.o_bias = spec.o_bias || has(arch.gguf_names.o_bias);
  spec.mlp_bias = spec.mlp_bias || has(arch.gguf_names.up_bias);
  if (spec.vocab_size == 0) {
    const auto embedding = source.find(arch.gguf_names.token_embedding);
    if (embedding && embedding->shape.size() == 2) spec.vocab_size = int(embedding->shape[0]);
  }
  spec.tied_embeddings = spec.tied_embeddings || !source.find(arch.gguf_names.output);
  read_rope_freq_factors(file.name(), source, &spec);
  spec.validate(file.name());
  return spec;
}

}  // namespace tessera
