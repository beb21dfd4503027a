#include "models/decoder_weights.h"

#include <cstring>
#include <map>
#include <numeric>
#include <set>

#include "engine/core/error.h"
#include "engine/io/content_hash.h"
#include "models/weight_binder.h"

namespace tessera {
namespace {

using namespace binding;

void bind_attention(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b,
                    LayerWeights& layer) {
  const int64_t d = spec.d_model, hd = spec.head_dim, q_dim = int64_t(spec.n_heads) * hd, kv_dim = int64_t(spec.n_kv_heads) * hd;
  // This rank's heads: rows of Q, K and V, columns of O.
  const int64_t q_first = shard.sharded() ? shard.first(shard.q) : 0, q_count = shard.sharded() ? shard.count(shard.q) : q_dim;
  const int64_t kv_first = shard.sharded() ? shard.kv_head_first * hd : 0, kv_count = shard.sharded() ? shard.kv_heads * hd : kv_dim;
  auto name = [l](const std::string& pattern) { return pattern.empty() ? pattern : layer_name(pattern, l); };
  if (!names.qkv.empty()) {
    const std::string fused = name(names.qkv);
    const QuantizedLinear qkv = b.linear(fused, q_dim + 2 * kv_dim, d);
    layer.q = b.rows_of(qkv.row_slice(fused + "[q]", 0, q_dim), q_first, q_count, "", false);
    layer.k = b.rows_of(qkv.row_slice(fused + "[k]", q_dim, kv_dim), kv_first, kv_count, "", false);
    layer.v = b.rows_of(qkv.row_slice(fused + "[v]", q_dim + kv_dim, kv_dim), kv_first, kv_count, "", false);
  } else {
    layer.q = b.rows_of(b.linear(name(names.q), q_dim, d), q_first, q_count, name(names.q_bias), spec.qkv_bias);
    layer.k = b.rows_of(b.linear(name(names.k), kv_dim, d), kv_first, kv_count, name(names.k_bias), spec.qkv_bias);
    layer.v = b.rows_of(b.linear(name(names.v), kv_dim, d, LinearRole::kValue), kv_first, kv_count, name(names.v_bias), spec.qkv_bias);
  }
  layer.o = output_projection(b, shard, b.linear(name(names.o), d, q_dim), q_first, q_count, name(names.o_bias), spec.o_bias);
  if (spec.qk_norm) {
    layer.q_norm = b.device_vector(name(names.q_norm), spec.head_dim, true);
    layer.k_norm = b.device_vector(name(names.k_norm), spec.head_dim, true);
  }
  layer.attn_norm = b.device_vector(name(names.attn_norm), d, true);
  if (spec.post_attention_norm) layer.post_attn_norm = b.device_vector(name(names.post_attn_norm), d, true);
  if (spec.attention_sinks) {
    // This rank's query heads' sinks.
    const float* all = b.host_vector(name(names.sinks), spec.n_heads, true);
    layer.sinks = static_cast<const float*>(b.place(all + q_first / hd, size_t(q_count / hd) * sizeof(float)));
  }
}

void bind_ffn(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b, LayerWeights& layer) {
  const int64_t d = spec.d_model, f = spec.ffn_dim;
  const int64_t first = shard.sharded() ? shard.first(shard.ffn) : 0, count = shard.sharded() ? shard.count(shard.ffn) : f;
  auto name = [l](const std::string& pattern) { return pattern.empty() ? pattern : layer_name(pattern, l); };
  if (spec.moe.n_experts > 0) {
    bind_experts(spec, names, shard, l, b, layer);
    if (spec.moe.shared_ffn_dim > 0) bind_shared_expert(spec, names, shard, l, b, layer);
  } else if (!names.gate_up.empty()) {
    const std::string fused = name(names.gate_up);
    const QuantizedLinear gate_up = b.linear(fused, 2 * f, d);
    layer.gate = b.rows_of(gate_up.row_slice(fused + "[gate]", 0, f), first, count, "", false);
    layer.up = b.rows_of(gate_up.row_slice(fused + "[up]", f, f), first, count, "", false);
  } else {
    layer.gate = b.rows_of(b.linear(name(names.gate), f, d), first, count, name(names.gate_bias), spec.mlp_bias);
    layer.up = b.rows_of(b.linear(name(names.up), f, d), first, count, name(names.up_bias), spec.mlp_bias);
  }
  if (spec.moe.n_experts == 0) {
    layer.down = output_projection(b, shard, b.linear(name(names.down), d, f), first, count, name(names.down_bias), spec.mlp_bias);
  }
  layer.ffn_norm = b.device_vector(name(names.ffn_norm), d, true);
  if (spec.post_ffn_norm) layer.post_ffn_norm = b.device_vector(name(names.post_ffn_norm), d, true);
}

// The vocabulary rows this rank keeps of the embeddings and the output head.
struct VocabRows {
  int64_t first, count;
};

VocabRows vocab_rows(const TensorShard& shard, const DecoderSpec& spec) {
  if (!shard.sharded()) return {0, spec.vocab_size};
  return {shard.first(shard.vocab), shard.count(shard.vocab)};
}

// A separate output matrix the spec ties to the embedding is accepted only
// as an exact copy of it (transformers then ignores it too).
void bind_output(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, const SourceTensor& embedding,
                 Binder& b, DecoderWeights& w) {
  const auto output = b.find(names.output);
  // A quantized checkpoint carries its own head even where the model ties it.
  const bool quantized_head = output && (output->dtype == DType::kI8 || output->dtype == DType::kU8) && b.stored_quantization();
  if (spec.tied_embeddings && output && !quantized_head) {
    const bool copy = output->dtype == embedding.dtype && output->shape == embedding.shape &&
                      output->n_bytes == embedding.n_bytes && std::memcmp(output->data, embedding.data, embedding.n_bytes) == 0;
    if (!copy) {
      throw Error(b.source_name() + ": tensor '" + names.output +
                  "' is not used: the embeddings are tied (tie_word_embeddings) and it differs from them");
    }
    b.mark_used(names.output);
  }
  const std::string& matrix = (spec.tied_embeddings && !quantized_head) || !output ? names.token_embedding : names.output;
  const VocabRows vocab = vocab_rows(shard, spec);
  QuantizedLinear head = b.linear(matrix, spec.vocab_size, spec.d_model, LinearRole::kHead);
  head.multiplies_prompts = false;
  w.output = b.rows_of(head, vocab.first, vocab.count, "", false);
}

bool is_derived(const WeightNames& names, const std::string& tensor, int n_layers) {
  for (const std::string& pattern : names.derived) {
    for (int l = 0; l < n_layers; ++l) {
      if (layer_name(pattern, l) == tensor) return true;
    }
  }
  return false;
}

// FFN channels move between ranks in whole blocks (or groups) of the down
// projection, which is split by its input columns.
int ffn_alignment(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source, const LinearQuantization& quantization) {
  int align = 1;
  auto join = [&](int unit) { align = unit > 0 ? std::lcm(align, unit) : align; };
  for (const auto* q : {&quantization.stored, &quantization.at_load}) {
    if (*q) join((*q)->layers.group_size), join((*q)->final_layer.group_size);
  }
  for (int l = 0; l < spec.n_layers; ++l) {
    for (const std::string* down : {&names.down, &names.expert_down}) {
      if (down->empty()) continue;
      if (const auto t = source.find(expert_name(layer_name(*down, l), 0))) join(int(dtype_info(t->dtype).block_elems));
    }
  }
  return align;
}

// This rank's rows of the token embeddings: its vocabulary share, as the
// output head's, when sharded (the ranks sum their lookups).
EmbeddingTable embedding_share(const SourceTensor& table, const TensorShard& shard, const DecoderSpec& spec, Binder& b) {
  const VocabRows vocab = vocab_rows(shard, spec);
  const uint64_t row_bytes = table.n_bytes / uint64_t(spec.vocab_size);
  const auto* base = static_cast<const uint8_t*>(table.data);
  return {table.dtype, b.place(base + uint64_t(vocab.first) * row_bytes, size_t(uint64_t(vocab.count) * row_bytes)),
          vocab.first, vocab.count, spec.d_model};
}

}  // namespace

std::unique_ptr<DecoderWeights> bind_weights(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                             Backend& backend, const std::vector<std::string>& consumed_elsewhere,
                                             const LinearQuantization& quantization, const TensorRank& tensor_rank) {
  auto weights = std::make_unique<DecoderWeights>();
  const bool split_down_columns = tensor_rank.world > 1 && tensor_rank.layout == TensorParallelLayout::kAllReduce;
  weights->shard = plan_tensor_shard(spec, tensor_rank.rank, tensor_rank.world, tensor_rank.layout,
                                     split_down_columns ? ffn_alignment(spec, names, source, quantization) : 1, source.name());
  const TensorShard& shard = weights->shard;
  Binder b(source, backend, *weights, quantization);
  const SourceTensor embedding = b.require(names.token_embedding, {spec.vocab_size, spec.d_model});
  if (!backend.supports(Op::kEmbedding, embedding.dtype)) {
    throw Error(source.name() + ": tensor '" + names.token_embedding + "': format " + std::string(dtype_name(embedding.dtype)) +
                " is not supported");
  }
  weights->token_embedding = embedding_share(embedding, shard, spec, b);
  weights->output_norm = b.device_vector(names.output_norm, spec.d_model, true);
  bind_output(spec, names, shard, embedding, b, *weights);
  weights->layers.resize(size_t(spec.n_layers));
  for (int l = 0; l < spec.n_layers; ++l) {
    b.set_layer(l, spec.n_layers);
    bind_attention(spec, names, shard, l, b, weights->layers[size_t(l)]);
    bind_ffn(spec, names, shard, l, b, weights->layers[size_t(l)]);
  }
  for (const std::string& name : consumed_elsewhere) b.mark_used(name);
  for (const std::string& name : source.names()) {
    if (!b.used(name) && !is_derived(names, name, spec.n_layers)) {
      throw Error(source.name() + ": tensor '" + name + "' is not used by the " + spec.architecture +
                  " decoder as configured (a flag the model needs may be missing from its config)");
    }
  }
  return weights;
}

}  // namespace tessera
