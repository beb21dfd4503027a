#pragma once
// The decoder's weights, bound by name, checked against the spec's shapes,
// and handed to the backend: each linear weight becomes the backend's
// prepared form of its scheme (kernel chosen here, at load), every other
// tensor is made resident on the device. Every tensor of the checkpoint must
// be used, or binding fails naming the first one that is not.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/io/artifact_cache.h"
#include "kernels/backend.h"
#include "models/architecture.h"
#include "models/tensor_shard.h"
#include "models/tensor_source.h"
#include "quant/int_weights.h"
#include "quant/schemes.h"

namespace tessera {

// Under tensor parallelism each rank keeps the rows of its vocabulary share.
struct EmbeddingTable {
  DType dtype = DType::kF32;
  const void* data = nullptr;  // (rows, d_model), device memory: ids first_id … first_id + rows - 1
  int64_t first_id = 0, rows = 0, cols = 0;
};

// One expert of a mixture-of-experts layer: an FFN of its own.
struct ExpertWeights {
  std::unique_ptr<PreparedLinear> gate, up, down;  // gate, up: (ffn_dim, d_model); down: (d_model, ffn_dim)
};

// Device pointers; biases are part of their linear weights.
struct LayerWeights {
  // Under tensor parallelism each holds this rank's part (models/tensor_shard.h).
  std::unique_ptr<PreparedLinear> q, k, v, o;  // q: (n_heads * head_dim, d_model) …
  std::unique_ptr<PreparedLinear> gate, up, down;  // null in an MoE layer
  std::unique_ptr<PreparedLinear> router;          // MoE: (n_experts, d_model), kept in floating point
  std::vector<ExpertWeights> experts;              // MoE: (n_experts)
  ExpertWeights shared;                            // MoE with a shared expert: (shared_ffn_dim, d_model) …
  std::unique_ptr<PreparedLinear> shared_gate;     // (1, d_model), kept in floating point
  const float* attn_norm = nullptr;       // (d_model)
  const float* ffn_norm = nullptr;        // (d_model)
  const float* q_norm = nullptr;          // (head_dim), qk_norm only
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;  // (d_model)
  const float* post_ffn_norm = nullptr;
  const float* sinks = nullptr;           // (this rank's query heads), attention_sinks only
};

// A rank of a tensor-parallel group; {0, 1}: the whole model.
struct TensorRank {
  int rank = 0;
  int world = 1;
  TensorParallelLayout layout = TensorParallelLayout::kExact;
};

struct DecoderWeights {
  TensorShard shard;  // the part of the model these weights hold
  EmbeddingTable token_embedding;
  const float* output_norm = nullptr;        // (d_model)
  std::unique_ptr<PreparedLinear> output;    // (vocab, d_model); sharded: this rank's vocabulary rows
  std::vector<LayerWeights> layers;
  std::deque<std::vector<uint8_t>> converted;       // host copies converted to f32; addresses stay stable
  std::deque<quant::IntMatrix> quantized;           // linears quantized as they loaded, or unpacked
  std::deque<std::vector<int32_t>> input_orders;    // GPTQ act-order: each unpacked linear's input order
  std::vector<std::shared_ptr<const void>> resident;  // device placements of the tensors above
  // Linears quantized at load: read from the artifact cache, or made now.
  int cached_linears = 0;
  int quantized_linears = 0;
};

// How the linear weights are quantized: as the checkpoint stores them
// (`tessera quantize` output: NAME an int8 or packed int4 tensor beside
// NAME_scale and, for asymmetric 4 bits, NAME_zero_point), or from floating
// point (or GGUF blocks, dequantized first) as they load.
struct LinearQuantization {
  std::optional<quant::SchemeChoice> stored;
  std::optional<quant::SchemeChoice> at_load;
  // Linears quantized at load are read from here when an earlier start
  // stored them (keyed by their source bytes, settings and `cache_isa`),
  // and stored after they are made.
  const ArtifactCache* cache = nullptr;
  std::string cache_isa;
};

// Throws tessera::Error naming the tensor, its shape and the expected shape,
// or the first tensor of `source` that nothing uses. `consumed_elsewhere`
// lists tensors the caller read itself (rope_freqs.weight).
std::unique_ptr<DecoderWeights> bind_weights(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                             Backend& backend, const std::vector<std::string>& consumed_elsewhere = {},
                                             const LinearQuantization& quantization = {}, const TensorRank& tensor_rank = {});

}  // namespace tessera
