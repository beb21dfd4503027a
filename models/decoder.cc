#include "models/decoder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "engine/core/op_profile.h"
#include "kernels/rope_angles.h"
#include "models/decoder_timing.h"

namespace tessera {

void Decoder::linear(const Pass& pass, const char* name, const LinearArgs& args) const {
  uint64_t bytes = 0;
  if (profile_) {
    for (int i = 0; i < args.n_outputs; ++i) {
      const QuantizedLinear& w = args.outputs[i].weight->desc();
      bytes += w.row_stride * uint64_t(w.rows);
    }
  }
  timed(pass, name, [&] { pass.ops.linear(args, pass.stream); }, bytes);
}

Decoder::Decoder(const DecoderSpec& spec, const DecoderWeights& weights, Backend& backend, const DecoderCapacity& capacity,
                 Communicator* comm)
    : spec_(spec), w_(weights), capacity_(capacity), comm_(weights.shard.sharded() ? comm : nullptr) {
  if (capacity.max_tokens <= 0 || capacity.max_seqs <= 0) throw Error("decoder: capacity must be positive");
  const TensorShard& shard = weights.shard;
  if (!shard.sharded() && comm && comm->world() > 1) ring_ = std::make_unique<KvRing>(*comm);
  if (shard.sharded() && (!comm || comm->world() != shard.world || comm->rank() != shard.rank)) {
    throw Error("decoder: tensor-parallel weights of rank " + std::to_string(shard.rank) + " of " + std::to_string(shard.world) +
                " need that rank's communicator");
  }
  const size_t t = size_t(capacity.max_tokens);
  const size_t d = size_t(spec.d_model);
  const size_t f = std::max(size_t(spec.ffn_dim), size_t(spec.moe.shared_ffn_dim));  // the widest FFN a layer runs
  const size_t q_dim = size_t(spec.n_heads) * size_t(spec.head_dim), kv_dim = size_t(spec.n_kv_heads) * size_t(spec.head_dim);
  // Sharded, a rank's attention output and FFN activation are gathered
  // from their buffers, which therefore hold the whole width.
  const size_t attn_width = shard.sharded() ? size_t(shard.q.total()) : q_dim,
               ffn_width = std::max(shard.sharded() ? size_t(shard.ffn.total()) : f, f);
  const Workspace::Region x = workspace_.reserve<float>(t * d), h = workspace_.reserve<float>(t * d),
                          q = workspace_.reserve<float>(t * q_dim), k = workspace_.reserve<float>(t * kv_dim),
                          v = workspace_.reserve<float>(t * kv_dim), attn = workspace_.reserve<float>(t * attn_width),
                          proj = workspace_.reserve<float>(t * d), gate = workspace_.reserve<float>(t * ffn_width),
                          up = workspace_.reserve<float>(t * f), rows = workspace_.reserve<float>(t * d);
  Workspace::Region whole{}, part{}, gathered{};
  if (shard.sharded() && shard.exact()) {
    const size_t widest = size_t(std::max({shard.q.largest(), shard.ffn.largest(), shard.model.largest()}));
    whole = workspace_.reserve<float>(t * std::max(attn_width, ffn_width));
    part = workspace_.reserve<float>(t * d);
    gathered = workspace_.reserve<float>(size_t(shard.world) * t * widest);
  }
  workspace_.commit(backend);
  act_ = {workspace_.get<float>(x),    workspace_.get<float>(h),    workspace_.get<float>(q),
          workspace_.get<float>(k),    workspace_.get<float>(v),    workspace_.get<float>(attn),
          workspace_.get<float>(proj), workspace_.get<float>(gate), workspace_.get<float>(up),
          workspace_.get<float>(rows)};
  if (shard.sharded() && shard.exact()) {
    act_.whole = workspace_.get<float>(whole);
    act_.part = workspace_.get<float>(part);
    act_.gathered = workspace_.get<float>(gathered);
  }
  heads_gather_.split = &shard.q;
  ffn_gather_.split = &shard.ffn;
  model_gather_.split = &shard.model;
  vocab_gather_.split = &shard.vocab;
  plan_ = backend.create_attention_plan(capacity.max_tokens, capacity.max_seqs, spec.n_kv_heads);
  auto place = [&](const std::vector<float>& table) -> const float* {
    if (table.empty()) return nullptr;
    rope_tables_.push_back(backend.place_weights(table.data(), table.size() * sizeof(float)));
    return static_cast<const float*>(rope_tables_.back().get());
  };
  inv_freq_ = place(spec.rope.inv_freq);
  local_inv_freq_ = place(spec.rope.local_inv_freq);
  freq_factors_ = place(spec.rope.freq_factors);
  if (backend.reads_rope_angle_table()) place_rope_tables(backend);
  if (spec.moe.n_experts > 0) {
    const size_t routed = t * size_t(spec.moe.top_k);
    experts_ = std::make_unique<Experts>();
    experts_->scores = DeviceBuffer(backend, t * size_t(spec.moe.n_experts) * sizeof(float));
    experts_->rows = DeviceBuffer(backend, routed * sizeof(int32_t));
    experts_->weights = DeviceBuffer(backend, routed * sizeof(float));
    experts_->input = DeviceBuffer(backend, t * d * sizeof(float));
    experts_->output = DeviceBuffer(backend, t * d * sizeof(float));
    if (spec.moe.shared_ffn_dim > 0) {
      std::vector<int32_t> identity(t);
      std::iota(identity.begin(), identity.end(), 0);
      experts_->shared_rows = DeviceBuffer(backend, t * sizeof(int32_t));
      backend.copy_host_to_device(experts_->shared_rows.data(), identity.data(), t * sizeof(int32_t), backend.default_stream());
      backend.default_stream().synchronize();
      experts_->shared_scores = DeviceBuffer(backend, t * sizeof(float));
      experts_->shared_weights = DeviceBuffer(backend, t * sizeof(float));
    }
  }
}

// Positions whose angles an accelerator reads from a table; later ones are
// computed on the device, their last bits possibly apart from the CPU's.
constexpr int32_t kMaxAngleTablePositions = 32768;

void Decoder::place_rope_tables(Backend& backend) {
  const RopeSpec& r = spec_.rope;
  angle_positions_ = std::clamp<int32_t>(spec_.max_context, 1, kMaxAngleTablePositions);
  auto place = [&](bool local) {
    const ops::RopeParams host = rope_recipe(local, r.inv_freq.data(), r.local_inv_freq.data(),
                                             r.freq_factors.empty() ? nullptr : r.freq_factors.data());
    const std::vector<float> table = ops::rope_table(host, angle_positions_);
    rope_tables_.push_back(backend.place_weights(table.data(), table.size() * sizeof(float)));
    return static_cast<const float*>(rope_tables_.back().get());
  };
  global_angles_ = place(false);
  const bool any_local = r.local_base > 0.0f && std::any_of(spec_.sliding_window.begin(), spec_.sliding_window.end(),
                                                            [](int w) { return w > 0; });
  if (any_local) local_angles_ = place(true);
}

Decoder::~Decoder() = default;

void Decoder::observe(const Pass& pass, const char* name, int layer, const float* values, int64_t n_tokens,
                      int64_t width) const {
  if (!observer_) return;
  std::vector<float> host(size_t(n_tokens * width));
  pass.backend.copy_device_to_host(host.data(), values, host.size() * sizeof(float), pass.stream);
  pass.stream.synchronize();
  observer_(name, layer, host.data(), n_tokens, width);
}

ops::RopeParams Decoder::rope_recipe(bool local, const float* inv_freq, const float* local_inv_freq,
                                     const float* freq_factors) const {
  const RopeSpec& r = spec_.rope;
  ops::RopeParams p;
  p.style = r.pairing == RotaryPairing::kAdjacent ? ops::RopeStyle::kInterleaved : ops::RopeStyle::kHalves;
  p.rotary_dim = r.dim;
  p.attn_factor = r.attn_factor;
  if (r.recipe == RopeRecipe::kTransformers) {
    p.numerics = ops::RopeNumerics::kFrequencyTable;
    p.inv_freq = local ? local_inv_freq : inv_freq;
    return p;
  }
  p.ext_factor = r.ext_factor;
  p.corr_low = r.corr_low;
  p.corr_high = r.corr_high;
  p.numerics = ops::RopeNumerics::kGgml;
  p.freq_base = local ? r.local_base : r.base;
  p.freq_scale = local ? 1.0f : r.freq_scale;  // scaling applies to the global layers only
  p.freq_factors = local ? nullptr : freq_factors;
  return p;
}

ops::RopeParams Decoder::rope_params(int layer) const {
  const bool local = spec_.sliding_window[size_t(layer)] > 0 && spec_.rope.local_base > 0.0f;
  ops::RopeParams p = rope_recipe(local, inv_freq_, local_inv_freq_, freq_factors_);
  p.cos_table = local ? local_angles_ : global_angles_;
  p.table_positions = p.cos_table ? angle_positions_ : 0;
  return p;
}

void Decoder::attention_block(const Pass& pass, int layer, const ForwardBatch& batch, const KvLayout& layout,
                              const KvLayer& kv) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  float *x = act_.x, *h = act_.h, *q = act_.q, *k = act_.k, *v = act_.v, *attn = act_.attn, *proj = act_.proj;
  const int n = batch.n_tokens;
  const int64_t q_width = int64_t(spec_.n_heads) * spec_.head_dim, kv_width = int64_t(spec_.n_kv_heads) * spec_.head_dim;
  const float offset = spec_.norm_weight_offset, eps = spec_.norm_eps;
  timed(pass, "attn_norm", [&] { pass.ops.rms_norm({x, lw.attn_norm, offset, eps, n, spec_.d_model, h}, pass.stream); });
  observe(pass, "attn_norm", layer, h, n, spec_.d_model);
  const LinearOutput qkv[] = {{lw.q.get(), q}, {lw.k.get(), k}, {lw.v.get(), v}};
  linear(pass, "qkv", {h, n, qkv, 3});
  if (spec_.qk_norm) {
    timed(pass, "qk_norm", [&] {
      pass.ops.rms_norm({q, lw.q_norm, offset, eps, int64_t(n) * spec_.n_heads, spec_.head_dim, q}, pass.stream);
      pass.ops.rms_norm({k, lw.k_norm, offset, eps, int64_t(n) * spec_.n_kv_heads, spec_.head_dim, k}, pass.stream);
    });
  }
  observe(pass, "q_normed", layer, q, n, q_width);
  const ops::RopeParams rope = rope_params(layer);
  timed(pass, "rope", [&] {
    pass.ops.rope({q, batch.positions, n, spec_.n_heads, spec_.head_dim, rope}, pass.stream);
    pass.ops.rope({k, batch.positions, n, spec_.n_kv_heads, spec_.head_dim, rope}, pass.stream);
  });
  observe(pass, "q_rope", layer, q, n, q_width);
  observe(pass, "k_rope", layer, k, n, kv_width);
  // An int8 cache centres keys on the key bias, their constant part (not
  // once a norm follows the projection).
  const float* k_center = lw.k_norm ? nullptr : lw.k->desc().bias;
  const KvWriteArgs write{kv.k, kv.v, layout.dtype, kv_width, batch.slots, n, k, v, layout.head_dim, kv.k_scales, kv.v_scales, k_center};
  timed(pass, "kv_write", [&] { pass.ops.kv_write(write, pass.stream); });
  if (batch.context && ring_) {
    timed(pass, "kv_ring", [&] { ring_->exchange(pass.backend, pass.stream, *batch.context, k, v, write); });
  }

  const int window = spec_.sliding_window[size_t(layer)];
  ops::AttentionParams params;
  params.scale = spec_.attention_scale > 0.0f ? spec_.attention_scale : 1.0f / std::sqrt(float(spec_.head_dim));
  params.scale_queries = spec_.scale_queries;
  params.mask = window > 0 ? ops::MaskMod::kSlidingWindow : ops::MaskMod::kCausal;
  params.window = window;
  params.sinks = lw.sinks;
  if (spec_.attn_softcap > 0.0f) {
    params.score = ops::ScoreMod::kSoftcap;
    params.softcap = spec_.attn_softcap;
  }
  if (w_.shard.sharded()) {
    params.query_group = w_.shard.query_group;
    params.query_head_offset = w_.shard.query_head_offset(spec_.head_dim);
  }
  const ops::PagedKv paged{kv.k,           kv.v,        layout.dtype, layout.page_size, layout.n_kv_heads,
                           layout.head_dim, kv.k_scales, kv.v_scales, k_center};
  timed(pass, "attention", [&] { pass.ops.attention({plan_.get(), q, spec_.n_heads, paged, params, attn}, pass.stream); });
  observe(pass, "attention", layer, attn, n, q_width);
  project_out(pass, "attn_out", *lw.o, attn, n, heads_gather_, proj);
  observe(pass, "attention_proj", layer, proj, n, spec_.d_model);
  if (spec_.post_attention_norm) {
    timed(pass, "post_norm", [&] { pass.ops.rms_norm({proj, lw.post_attn_norm, offset, eps, n, spec_.d_model, proj}, pass.stream); });
    observe(pass, "attn_post_norm", layer, proj, n, spec_.d_model);
  }
  timed(pass, "residual", [&] { pass.ops.add({x, proj, int64_t(n) * spec_.d_model}, pass.stream); });
  observe(pass, "attn_residual", layer, x, n, spec_.d_model);
}

void Decoder::ffn_block(const Pass& pass, int layer, int n) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  float *x = act_.x, *h = act_.h, *gate = act_.gate, *up = act_.up, *proj = act_.proj;
  const float offset = spec_.norm_weight_offset, eps = spec_.norm_eps;
  timed(pass, "ffn_norm", [&] { pass.ops.rms_norm({x, lw.ffn_norm, offset, eps, n, spec_.d_model, h}, pass.stream); });
  observe(pass, "ffn_norm", layer, h, n, spec_.d_model);
  if (experts_) {
    experts_block(pass, layer, n, h, proj);
  } else {
    const LinearOutput gate_up[] = {{lw.gate.get(), gate}, {lw.up.get(), up}};
    linear(pass, "gate_up", {h, n, gate_up, 2});
    observe(pass, "ffn_gate", layer, gate, n, spec_.ffn_dim);
    observe(pass, "ffn_up", layer, up, n, spec_.ffn_dim);
    timed(pass, "activation", [&] {
      pass.ops.gated_activation({gated_activation_op(spec_.activation), gate, up, int64_t(n) * spec_.ffn_dim, gate}, pass.stream);
    });
    observe(pass, "ffn_act", layer, gate, n, spec_.ffn_dim);
    project_out(pass, "down", *lw.down, gate, n, ffn_gather_, proj);
  }
  observe(pass, "ffn_out", layer, proj, n, spec_.d_model);
  if (spec_.post_ffn_norm) {
    timed(pass, "post_norm", [&] { pass.ops.rms_norm({proj, lw.post_ffn_norm, offset, eps, n, spec_.d_model, proj}, pass.stream); });
  }
  timed(pass, "residual", [&] { pass.ops.add({x, proj, int64_t(n) * spec_.d_model}, pass.stream); });
}

void Decoder::output_head(const Pass& pass, const ForwardBatch& batch, float* logits) {
  float *x = act_.x, *rows = act_.rows;
  const int64_t d = spec_.d_model, n_rows = batch.n_logit_rows;
  timed(pass, "output_norm", [&] {
    pass.ops.gather_rows({x, d, batch.logit_rows, n_rows, rows}, pass.stream);
    pass.ops.rms_norm({rows, w_.output_norm, spec_.norm_weight_offset, spec_.norm_eps, n_rows, d, rows}, pass.stream);
  });
  // A sharded head writes this rank's vocabulary rows apart, then gathers.
  const int64_t head_rows = w_.output->rows();
  const size_t share_bytes = size_t(n_rows * head_rows) * sizeof(float);
  if (comm_ && rank_logits_.size() < share_bytes) rank_logits_ = DeviceBuffer(pass.backend, share_bytes);
  float* head_out = comm_ ? rank_logits_.data_as<float>() : logits;
  const LinearOutput out[] = {{w_.output.get(), head_out}};
  linear(pass, "output", {rows, n_rows, out, 1});
  if (spec_.final_logit_softcap > 0.0f) {
    timed(pass, "softcap", [&] { pass.ops.softcap({head_out, n_rows * head_rows, spec_.final_logit_softcap}, pass.stream); });
  }
  if (comm_) {
    const size_t gathered_bytes = share_bytes * size_t(comm_->world());
    if (gathered_logits_.size() < gathered_bytes) gathered_logits_ = DeviceBuffer(pass.backend, gathered_bytes);
    plan_gather(pass, n_rows, vocab_gather_);
    gather_columns(pass, head_out, n_rows, vocab_gather_, gathered_logits_.data_as<float>(), logits);
  }
}

void Decoder::final_hidden(const Pass& pass, const ForwardBatch& batch, float* hidden) {
  const int64_t d = spec_.d_model, n_rows = batch.n_hidden_rows;
  timed(pass, "output_norm", [&] {
    pass.ops.gather_rows({act_.x, d, batch.hidden_rows, n_rows, hidden}, pass.stream);
    pass.ops.rms_norm({hidden, w_.output_norm, spec_.norm_weight_offset, spec_.norm_eps, n_rows, d, hidden}, pass.stream);
  });
}

void Decoder::project_out(const Pass& pass, const char* name, const PreparedLinear& weight, const float* in, int n,
                          const Gather& in_gather, float* out) {
  if (comm_ && w_.shard.exact()) {
    gather_columns(pass, in, n, in_gather, act_.gathered, act_.whole);
    const LinearOutput part[] = {{&weight, act_.part}};
    linear(pass, name, {act_.whole, n, part, 1});
    gather_columns(pass, act_.part, n, model_gather_, act_.gathered, out);
    return;
  }
  const LinearOutput whole[] = {{&weight, out}};
  linear(pass, name, {in, n, whole, 1});
  if (comm_) timed(pass, "all_reduce", [&] { comm_->all_reduce_sum(out, size_t(n) * size_t(spec_.d_model), pass.stream); });
}

void Decoder::plan_gather(const Pass& pass, int64_t n, Gather& gather) {
  const ChannelSplit& split = *gather.split;
  const int64_t unit = split.unit, widest = split.largest(), total = split.total();
  // Each rank sends (n, its count) with slack up to (n, widest); in units
  // of `unit` channels, output row (t, first_k / unit + j) is gathered row
  // (k * n * widest + t * count_k) / unit + j.
  gather.host.resize(size_t(n * total / unit));
  for (size_t k = 0; k < split.count.size(); ++k) {
    const int64_t first = split.first[k] / unit, units = split.count[k] / unit;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t from = (int64_t(k) * n * widest + t * units * unit) / unit, to = t * (total / unit) + first;
      for (int64_t j = 0; j < units; ++j) gather.host[size_t(to + j)] = int32_t(from + j);
    }
  }
  const size_t bytes = gather.host.size() * sizeof(int32_t);
  if (gather.device.size() < bytes) gather.device = DeviceBuffer(pass.backend, bytes);
  pass.backend.copy_host_to_device(gather.device.data(), gather.host.data(), bytes, pass.stream);
}

void Decoder::gather_columns(const Pass& pass, const float* part, int64_t n, const Gather& gather, float* gathered, float* out) {
  const ChannelSplit& split = *gather.split;
  const size_t share_bytes = size_t(n * split.largest()) * sizeof(float);
  timed(pass, "all_gather", [&] {
    comm_->all_gather(part, share_bytes, gathered, pass.stream);
    pass.ops.gather_rows({gathered, split.unit, gather.device.data_as<int32_t>(), int64_t(gather.host.size()), out}, pass.stream);
  });
}

void Decoder::forward(Backend& backend, Stream& stream, const ForwardBatch& batch, const KvLayout& layout,
                      const std::vector<KvLayer>& kv, float* logits, float* hidden) {
  const int n = batch.n_tokens;
  if (n <= 0 || n > capacity_.max_tokens || batch.attention.n_seqs > capacity_.max_seqs || batch.n_logit_rows > n ||
      batch.n_hidden_rows > n || (batch.n_hidden_rows > 0 && !hidden)) {
    throw Error("decoder: a batch of " + std::to_string(n) + " tokens in " + std::to_string(batch.attention.n_seqs) +
                " sequences exceeds the capacity (" + std::to_string(capacity_.max_tokens) + " tokens, " +
                std::to_string(capacity_.max_seqs) + " sequences)");
  }
  const Pass pass{backend, stream, backend.kernels()};
  float* x = act_.x;
  const EmbeddingTable& emb = w_.token_embedding;
  const auto started = ProfileClock::now();
  timed(pass, "embedding", [&] {
    pass.ops.embedding({emb.dtype, emb.data, emb.first_id, emb.rows, emb.cols, batch.token_ids, n, x}, stream);
    // Each id's row is on one rank, zeros on the others: the sum is exact.
    if (comm_) comm_->all_reduce_sum(x, size_t(n) * size_t(spec_.d_model), stream);
    if (spec_.embedding_scale != 1.0f) pass.ops.scale({x, int64_t(n) * spec_.d_model, spec_.embedding_scale}, stream);
  });
  observe(pass, "embedding", 0, x, n, spec_.d_model);
  timed(pass, "attention_plan", [&] { pass.ops.plan_attention({batch.attention, n, spec_.n_kv_heads, plan_.get()}, stream); });
  if (comm_ && w_.shard.exact()) {
    for (Gather* g : {&heads_gather_, &ffn_gather_, &model_gather_}) plan_gather(pass, n, *g);
  }
  for (int l = 0; l < spec_.n_layers; ++l) {
    attention_block(pass, l, batch, layout, kv[size_t(l)]);
    ffn_block(pass, l, n);
    observe(pass, "layer_out", l, x, n, spec_.d_model);
  }
  if (batch.n_hidden_rows > 0) final_hidden(pass, batch, hidden);
  if (batch.n_logit_rows > 0) output_head(pass, batch, logits);
  if (profile_) {
    stream.synchronize();
    profile_->add_pass(seconds_between(started, ProfileClock::now()), n);
  }
}

}  // namespace tessera
