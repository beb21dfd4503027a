// The decoder's mixture-of-experts FFN. The router scores every token on the
// device; the host reads the scores, picks each token's experts and groups
// the step's tokens by expert (models/moe_routing.h); then each chosen
// expert runs once over all of its tokens, so its weights are read once per
// step, and its output is added, weighted, into its tokens' rows. Experts
// are added in expert order, each row computed by the same kernels whatever
// the batch, so a token's result does not depend on the batch it ran in.
//
// Under tensor parallelism every rank holds the whole router and routes
// alike (h is the same on every rank), and each expert is split as a dense
// FFN is: its FFN channels across the ranks (a shared expert is whole on
// every rank, computed alike and added after the experts' sum). The exact layout gathers each
// expert's activations and outputs (as project_out does, planned for the
// expert's tokens); the all-reduce layout adds every expert's partial sums
// into proj and reduces proj once, as a dense layer's down projection.
#include "models/decoder.h"
#include "models/decoder_timing.h"

#include <algorithm>
#include <cmath>

namespace tessera {

void Decoder::experts_block(const Pass& pass, int layer, int n, const float* h, float* proj) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  Experts& x = *experts_;
  const int n_experts = spec_.moe.n_experts;
  const int64_t d = spec_.d_model;
  float* scores = x.scores.data_as<float>();
  // A shared expert's gate reads the same input: one call scores both.
  const LinearOutput router[] = {{lw.router.get(), scores}, {lw.shared_gate.get(), x.shared_scores.data_as<float>()}};
  linear(pass, "router", {h, n, router, lw.shared_gate ? 2 : 1});
  observe(pass, "router", layer, scores, n, n_experts);
  x.host_scores.resize(size_t(n) * size_t(n_experts));
  pass.backend.copy_device_to_host(x.host_scores.data(), scores, x.host_scores.size() * sizeof(float), pass.stream);
  if (lw.shared_gate) {
    x.host_shared.resize(size_t(n));
    pass.backend.copy_device_to_host(x.host_shared.data(), x.shared_scores.data(), size_t(n) * sizeof(float), pass.stream);
  }
  pass.stream.synchronize();
  timed(pass, "routing", [&] { route_tokens(x.host_scores.data(), n, spec_.moe, &x.routes); });
  // The host vectors stay untouched until the next layer's synchronize,
  // after these copies have completed.
  const size_t routed = x.routes.rows.size();
  pass.backend.copy_host_to_device(x.rows.data(), x.routes.rows.data(), routed * sizeof(int32_t), pass.stream);
  pass.backend.copy_host_to_device(x.weights.data(), x.routes.weights.data(), routed * sizeof(float), pass.stream);
  pass.backend.fill_zero(proj, size_t(n) * size_t(d) * sizeof(float), pass.stream);
  // Experts chosen by the same tokens (every expert of a lone decoding
  // token) run their gate and up projections in one call, which gives the
  // threads the work of all of them at once.
  const std::vector<int32_t>& offsets = x.routes.offsets;
  auto tokens_of = [&](int e) { return offsets[size_t(e) + 1] - offsets[size_t(e)]; };
  auto same_tokens = [&](int a, int b) {
    return tokens_of(a) == tokens_of(b) && std::equal(x.routes.rows.begin() + offsets[size_t(a)], x.routes.rows.begin() + offsets[size_t(a) + 1],
                                                       x.routes.rows.begin() + offsets[size_t(b)]);
  };
  for (int e = 0; e < n_experts;) {
    if (tokens_of(e) == 0) {
      ++e;
      continue;
    }
    int group[kMaxSharedExperts] = {e}, n_group = 1, next = e + 1;
    for (; next < n_experts && n_group < kMaxSharedExperts && (n_group + 1) * tokens_of(e) <= capacity_.max_tokens; ++next) {
      if (tokens_of(next) == 0) continue;
      if (!same_tokens(e, next)) break;
      group[n_group++] = next;
    }
    expert_group(pass, lw, group, n_group, h, proj);
    e = next;
  }
  if (comm_ && w_.shard.exact()) {
    for (Gather* g : {&ffn_gather_, &model_gather_}) plan_gather(pass, n, *g);  // back to the pass's tokens
  } else if (comm_) {
    timed(pass, "all_reduce", [&] { comm_->all_reduce_sum(proj, size_t(n) * size_t(d), pass.stream); });
  }
  // Whole on every rank, added to the whole sum of the chosen experts.
  if (lw.shared_gate) shared_expert(pass, lw, n, h, proj);
}

void Decoder::expert_group(const Pass& pass, const LayerWeights& lw, const int* group, int n_group, const float* h, float* proj) {
  Experts& x = *experts_;
  const int64_t d = spec_.d_model, f = spec_.ffn_dim;
  const int32_t first = x.routes.offsets[size_t(group[0])], count = x.routes.offsets[size_t(group[0]) + 1] - first;
  float *input = x.input.data_as<float>(), *output = x.output.data_as<float>();
  const int32_t* rows = x.rows.data_as<int32_t>() + first;
  timed(pass, "expert_gather", [&] { pass.ops.gather_rows({h, d, rows, count, input}, pass.stream); });
  // Expert i of the group: gate and up at i * count rows of act_.gate and act_.up.
  LinearOutput gate_up[2 * kMaxSharedExperts];
  for (int i = 0; i < n_group; ++i) {
    const ExpertWeights& expert = lw.experts[size_t(group[i])];
    gate_up[2 * i] = {expert.gate.get(), act_.gate + int64_t(i) * count * f};
    gate_up[2 * i + 1] = {expert.up.get(), act_.up + int64_t(i) * count * f};
  }
  linear(pass, "gate_up", {input, count, gate_up, 2 * n_group});
  timed(pass, "activation", [&] {
    const int64_t values = int64_t(n_group) * count * f;
    pass.ops.gated_activation({gated_activation_op(spec_.activation), act_.gate, act_.up, values, act_.gate}, pass.stream);
  });
  const bool exact_shards = comm_ && w_.shard.exact();
  if (exact_shards) {
    for (Gather* g : {&ffn_gather_, &model_gather_}) plan_gather(pass, count, *g);  // the group's tokens
  }
  for (int i = 0; i < n_group; ++i) {
    const int e = group[i];
    const float* gate = act_.gate + int64_t(i) * count * f;
    if (exact_shards) {
      project_out(pass, "down", *lw.experts[size_t(e)].down, gate, count, ffn_gather_, output);
    } else {
      const LinearOutput down[] = {{lw.experts[size_t(e)].down.get(), output}};
      linear(pass, "down", {gate, count, down, 1});
    }
    const float* weights = x.weights.data_as<float>() + x.routes.offsets[size_t(e)];
    timed(pass, "expert_add", [&] { pass.ops.scatter_add_rows({proj, d, rows, weights, count, output}, pass.stream); });
  }
}

// The shared expert after the chosen ones (transformers adds it last): the
// whole FFN over every token, its rows added into proj scaled by the
// sigmoid of the gate's score, computed on the host from the scores read
// with the router's.
void Decoder::shared_expert(const Pass& pass, const LayerWeights& lw, int n, const float* h, float* proj) {
  Experts& x = *experts_;
  const int64_t d = spec_.d_model, f = spec_.moe.shared_ffn_dim;
  for (float& s : x.host_shared) s = 1.0f / (1.0f + std::exp(-s));
  pass.backend.copy_host_to_device(x.shared_weights.data(), x.host_shared.data(), size_t(n) * sizeof(float), pass.stream);
  const LinearOutput gate_up[] = {{lw.shared.gate.get(), act_.gate}, {lw.shared.up.get(), act_.up}};
  linear(pass, "shared_gate_up", {h, n, gate_up, 2});
  timed(pass, "activation", [&] {
    pass.ops.gated_activation({gated_activation_op(spec_.activation), act_.gate, act_.up, int64_t(n) * f, act_.gate}, pass.stream);
  });
  float* output = x.output.data_as<float>();
  const LinearOutput down[] = {{lw.shared.down.get(), output}};
  linear(pass, "shared_down", {act_.gate, n, down, 1});
  const int32_t* rows = x.shared_rows.data_as<int32_t>();
  const float* weights = x.shared_weights.data_as<float>();
  timed(pass, "expert_add", [&] { pass.ops.scatter_add_rows({proj, d, rows, weights, n, output}, pass.stream); });
}

}  // namespace tessera
