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
// FFN is: its FFN channels across the ranks. The exact layout gathers each
// expert's activations and outputs (as project_out does, planned for the
// expert's tokens); the all-reduce layout adds every expert's partial sums
// into proj and reduces proj once, as a dense layer's down projection.
#include "models/decoder.h"
#include "models/decoder_timing.h"

namespace tessera {

void Decoder::experts_block(const Pass& pass, int layer, int n, const float* h, float* proj) {
  const LayerWeights& lw = w_.layers[size_t(layer)];
  Experts& x = *experts_;
  const int n_experts = spec_.moe.n_experts;
  const int64_t d = spec_.d_model, f = spec_.ffn_dim;
  float* scores = x.scores.data_as<float>();
  const LinearOutput router[] = {{lw.router.get(), scores}};
  linear(pass, "router", {h, n, router, 1});
  observe(pass, "router", layer, scores, n, n_experts);
  x.host_scores.resize(size_t(n) * size_t(n_experts));
  pass.backend.copy_device_to_host(x.host_scores.data(), scores, x.host_scores.size() * sizeof(float), pass.stream);
  pass.stream.synchronize();
  timed(pass, "routing", [&] { route_tokens(x.host_scores.data(), n, spec_.moe, &x.routes); });
  // The host vectors stay untouched until the next layer's synchronize,
  // after these copies have completed.
  const size_t routed = x.routes.rows.size();
  pass.backend.copy_host_to_device(x.rows.data(), x.routes.rows.data(), routed * sizeof(int32_t), pass.stream);
  pass.backend.copy_host_to_device(x.weights.data(), x.routes.weights.data(), routed * sizeof(float), pass.stream);
  pass.backend.fill_zero(proj, size_t(n) * size_t(d) * sizeof(float), pass.stream);
  float *input = x.input.data_as<float>(), *output = x.output.data_as<float>(), *gate = act_.gate, *up = act_.up;
  for (int e = 0; e < n_experts; ++e) {
    const int32_t first = x.routes.offsets[size_t(e)], count = x.routes.offsets[size_t(e) + 1] - first;
    if (count == 0) continue;
    const ExpertWeights& expert = lw.experts[size_t(e)];
    const int32_t* rows = x.rows.data_as<int32_t>() + first;
    timed(pass, "expert_gather", [&] { pass.ops.gather_rows({h, d, rows, count, input}, pass.stream); });
    const LinearOutput gate_up[] = {{expert.gate.get(), gate}, {expert.up.get(), up}};
    linear(pass, "gate_up", {input, count, gate_up, 2});
    timed(pass, "activation", [&] {
      pass.ops.gated_activation({gated_activation_op(spec_.activation), gate, up, int64_t(count) * f, gate}, pass.stream);
    });
    if (comm_ && w_.shard.exact()) {
      for (Gather* g : {&ffn_gather_, &model_gather_}) plan_gather(pass, count, *g);
      project_out(pass, "down", *expert.down, gate, count, ffn_gather_, output);
    } else {
      const LinearOutput down[] = {{expert.down.get(), output}};
      linear(pass, "down", {gate, count, down, 1});
    }
    timed(pass, "expert_add", [&] {
      pass.ops.scatter_add_rows({proj, d, rows, x.weights.data_as<float>() + first, count, output}, pass.stream);
    });
  }
  if (comm_ && w_.shard.exact()) {
    for (Gather* g : {&ffn_gather_, &model_gather_}) plan_gather(pass, n, *g);  // back to the pass's tokens
  } else if (comm_) {
    timed(pass, "all_reduce", [&] { comm_->all_reduce_sum(proj, size_t(n) * size_t(d), pass.stream); });
  }
}

}  // namespace tessera
