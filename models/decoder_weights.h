#pragma once
// The decoder's weights, bound by name and checked against the spec's
// shapes. Matrices stay in place in the checkpoint's mapping when a CPU
// kernel reads their format; other formats (BF16) and small vectors that are
// not f32 are converted once into owned buffers.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul.h"
#include "models/architecture.h"
#include "models/tensor_source.h"

namespace tessera {

struct EmbeddingTable {
  DType dtype = DType::kF32;
  const void* data = nullptr;  // [vocab][d_model]
  int64_t rows = 0, cols = 0;
};

struct LayerWeights {
  std::unique_ptr<cpu::LinearWeight> q, k, v, o;  // q: (n_heads * head_dim, d_model) …
  std::unique_ptr<cpu::LinearWeight> gate, up, down;
  const float* attn_norm = nullptr;       // (d_model)
  const float* ffn_norm = nullptr;        // (d_model)
  const float* q_bias = nullptr;          // (n_heads * head_dim), qkv_bias only
  const float* k_bias = nullptr;          // (n_kv_heads * head_dim)
  const float* v_bias = nullptr;
  const float* q_norm = nullptr;          // (head_dim), qk_norm only
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;  // (d_model)
  const float* post_ffn_norm = nullptr;
};

struct DecoderWeights {
  EmbeddingTable token_embedding;
  const float* output_norm = nullptr;
  std::unique_ptr<cpu::LinearWeight> output;  // (vocab, d_model)
  std::vector<LayerWeights> layers;
  std::deque<std::vector<uint8_t>> owned;  // converted copies; addresses stay stable
};

// Throws tessera::Error naming the tensor, its shape and the expected shape.
std::unique_ptr<DecoderWeights> bind_weights(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                             const cpu::IsaFeatures& isa);

}  // namespace tessera
