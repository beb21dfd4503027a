#include "models/decoder.h"

#include <cmath>
#include <cstring>

#include "engine/tensor/half.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/norm.h"

namespace tessera {
namespace {

void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += bias[i];
  }
}

void add_into(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

// Scatters each token's K and V rows to its cache slot.
void write_kv(const KvLayout& layout, const KvLayer& kv, const int64_t* slots, int n_tokens, const float* k, const float* v) {
  const int64_t row = int64_t(layout.n_kv_heads) * layout.head_dim;
  for (int t = 0; t < n_tokens; ++t) {
    const int64_t base = slots[t] * row;
    if (layout.dtype == DType::kF32) {
      std::memcpy(static_cast<float*>(kv.k) + base, k + t * row, size_t(row) * sizeof(float));
      std::memcpy(static_cast<float*>(kv.v) + base, v + t * row, size_t(row) * sizeof(float));
    } else {
      uint16_t* kd = static_cast<uint16_t*>(kv.k) + base;
      uint16_t* vd = static_cast<uint16_t*>(kv.v) + base;
      for (int64_t i = 0; i < row; ++i) {
        kd[i] = f32_to_f16(k[t * row + i]);
        vd[i] = f32_to_f16(v[t * row + i]);
      }
    }
  }
}

}  // namespace

void Decoder::ensure_workspace(int n_tokens) {
  const size_t t = size_t(n_tokens);
  const size_t q_dim = size_t(spec_.n_heads) * size_t(spec_.head_dim);
  const size_t kv_dim = size_t(spec_.n_kv_heads) * size_t(spec_.head_dim);
  x_.resize(t * size_t(spec_.d_model));
  h_.resize(t * size_t(spec_.d_model));
  proj_.resize(t * size_t(spec_.d_model));
  q_.resize(t * q_dim);
  attn_.resize(t * q_dim);
  k_.resize(t * kv_dim);
  v_.resize(t * kv_dim);
  gate_.resize(t * size_t(spec_.ffn_dim));
  up_.resize(t * size_t(spec_.ffn_dim));
}

void Decoder::attention_block(int layer, const ForwardBatch& batch, const KvLayout& layout, const KvLayer& kv,
                              cpu::ThreadPool& pool) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  const int n = batch.n_tokens;
  cpu::rms_norm(x_.data(), lw.attn_norm, spec_.norm_weight_offset, spec_.norm_eps, n, spec_.d_model, h_.data(), pool);
  observe("attn_norm", layer, h_, n, spec_.d_model);
  cpu::matmul_shared_input({{lw.q.get(), q_.data()}, {lw.k.get(), k_.data()}, {lw.v.get(), v_.data()}}, h_.data(), n, scratch_, pool);
  if (spec_.qkv_bias) {
    add_bias(q_.data(), lw.q_bias, n, lw.q->rows());
    add_bias(k_.data(), lw.k_bias, n, lw.k->rows());
    add_bias(v_.data(), lw.v_bias, n, lw.v->rows());
  }
  if (spec_.qk_norm) {
    cpu::rms_norm(q_.data(), lw.q_norm, spec_.norm_weight_offset, spec_.norm_eps, int64_t(n) * spec_.n_heads, spec_.head_dim,
                  q_.data(), pool);
    cpu::rms_norm(k_.data(), lw.k_norm, spec_.norm_weight_offset, spec_.norm_eps, int64_t(n) * spec_.n_kv_heads,
                  spec_.head_dim, k_.data(), pool);
  }
  observe("q_normed", layer, q_, n, int64_t(spec_.n_heads) * spec_.head_dim);
  const int window = spec_.sliding_window[size_t(layer)];
  cpu::RopeParams rope{spec_.rope.style, spec_.rope.dim, spec_.rope.base, spec_.rope.freq_scale,
                       spec_.rope.freq_factors.empty() ? nullptr : spec_.rope.freq_factors.data()};
  if (window > 0 && spec_.rope.local_base > 0.0f) {
    rope.freq_base = spec_.rope.local_base;
    rope.freq_scale = 1.0f;  // scaling applies to the global layers only
    rope.freq_factors = nullptr;
  }
  cpu::apply_rope(q_.data(), batch.positions, n, spec_.n_heads, spec_.head_dim, rope, pool);
  cpu::apply_rope(k_.data(), batch.positions, n, spec_.n_kv_heads, spec_.head_dim, rope, pool);
  observe("q_rope", layer, q_, n, int64_t(spec_.n_heads) * spec_.head_dim);
  observe("k_rope", layer, k_, n, int64_t(spec_.n_kv_heads) * spec_.head_dim);
  write_kv(layout, kv, batch.slots, n, k_.data(), v_.data());

  cpu::AttentionParams params;
  params.scale = spec_.attention_scale > 0.0f ? spec_.attention_scale : 1.0f / std::sqrt(float(spec_.head_dim));
  params.scale_queries = spec_.scale_queries;
  params.mask = window > 0 ? cpu::MaskMod::kSlidingWindow : cpu::MaskMod::kCausal;
  params.window = window;
  if (spec_.attn_softcap > 0.0f) {
    params.score = cpu::ScoreMod::kSoftcap;
    params.softcap = spec_.attn_softcap;
  }
  const cpu::PagedKv paged{kv.k, kv.v, layout.dtype, layout.page_size, layout.n_kv_heads, layout.head_dim};
  cpu::flex_attention(q_.data(), spec_.n_heads, paged, batch.attention, params, attn_.data(), pool, isa_);
  observe("attention", layer, attn_, n, int64_t(spec_.n_heads) * spec_.head_dim);
  cpu::matmul(*lw.o, attn_.data(), n, proj_.data(), scratch_, pool);
  observe("attention_proj", layer, proj_, n, spec_.d_model);
  if (spec_.post_attention_norm) {
    cpu::rms_norm(proj_.data(), lw.post_attn_norm, spec_.norm_weight_offset, spec_.norm_eps, n, spec_.d_model, proj_.data(), pool);
    observe("attn_post_norm", layer, proj_, n, spec_.d_model);
  }
  add_into(x_.data(), proj_.data(), int64_t(n) * spec_.d_model);
  observe("attn_residual", layer, x_, n, spec_.d_model);
}

void Decoder::ffn_block(int layer, int n, cpu::ThreadPool& pool) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  cpu::rms_norm(x_.data(), lw.ffn_norm, spec_.norm_weight_offset, spec_.norm_eps, n, spec_.d_model, h_.data(), pool);
  cpu::matmul_shared_input({{lw.gate.get(), gate_.data()}, {lw.up.get(), up_.data()}}, h_.data(), n, scratch_, pool);
  observe("ffn_gate", layer, gate_, n, spec_.ffn_dim);
  observe("ffn_up", layer, up_, n, spec_.ffn_dim);
  cpu::gated_activation(spec_.activation, gate_.data(), up_.data(), int64_t(n) * spec_.ffn_dim, gate_.data(), pool, isa_);
  observe("ffn_act", layer, gate_, n, spec_.ffn_dim);
  cpu::matmul(*lw.down, gate_.data(), n, proj_.data(), scratch_, pool);
  observe("ffn_out", layer, proj_, n, spec_.d_model);
  if (spec_.post_ffn_norm) {
    cpu::rms_norm(proj_.data(), lw.post_ffn_norm, spec_.norm_weight_offset, spec_.norm_eps, n, spec_.d_model, proj_.data(), pool);
  }
  add_into(x_.data(), proj_.data(), int64_t(n) * spec_.d_model);
}

void Decoder::forward(const ForwardBatch& batch, const KvLayout& layout, const std::vector<KvLayer>& kv, float* logits,
                      cpu::ThreadPool& pool) {
  const int n = batch.n_tokens;
  ensure_workspace(n);
  const EmbeddingTable& emb = w_.token_embedding;
  cpu::embedding_lookup(emb.dtype, emb.data, emb.cols, batch.token_ids, n, x_.data(), pool);
  if (spec_.embedding_scale != 1.0f) {
    for (float& value : x_) value *= spec_.embedding_scale;
  }
  observe("embedding", 0, x_, n, spec_.d_model);
  for (int l = 0; l < spec_.n_layers; ++l) {
    attention_block(l, batch, layout, kv[size_t(l)], pool);
    ffn_block(l, n, pool);
    observe("layer_out", l, x_, n, spec_.d_model);
  }
  if (batch.n_logit_rows == 0) return;
  const int64_t d = spec_.d_model;
  rows_.resize(size_t(batch.n_logit_rows) * size_t(d));
  for (int r = 0; r < batch.n_logit_rows; ++r) {
    std::memcpy(rows_.data() + r * d, x_.data() + int64_t(batch.logit_rows[r]) * d, size_t(d) * sizeof(float));
  }
  cpu::rms_norm(rows_.data(), w_.output_norm, spec_.norm_weight_offset, spec_.norm_eps, batch.n_logit_rows, d, rows_.data(), pool);
  cpu::matmul(*w_.output, rows_.data(), batch.n_logit_rows, logits, scratch_, pool);
  if (spec_.final_logit_softcap > 0.0f) {
    const float cap = spec_.final_logit_softcap;
    const int64_t total = int64_t(batch.n_logit_rows) * spec_.vocab_size;
    for (int64_t i = 0; i < total; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
  }
}

}  // namespace tessera
