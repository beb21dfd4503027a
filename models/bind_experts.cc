// The mixture-of-experts layers' weights (models/decoder_weights.cc binds
// the rest of a layer).
#include "engine/core/error.h"
#include "models/weight_binder.h"

namespace tessera::binding {

// A mixture-of-experts layer: the router whole on every rank, and each
// expert split as a dense FFN is (this rank's FFN channels of every expert).
void bind_experts(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b,
                  LayerWeights& layer) {
  const int64_t d = spec.d_model, f = spec.ffn_dim, n = spec.moe.n_experts;
  const int64_t first = shard.sharded() ? shard.first(shard.ffn) : 0, count = shard.sharded() ? shard.count(shard.ffn) : f;
  if (names.router.empty()) throw Error(b.source_name() + ": " + spec.architecture + " has no mixture-of-experts form");
  const bool biases = spec.moe.biases;
  layer.router = b.rows_of(b.linear(layer_name(names.router, l), n, d, LinearRole::kRouter), 0, n, layer_name(names.router_bias, l),
                           biases);
  layer.experts.resize(size_t(n));
  auto bias = [&](const std::string& pattern, int e, int64_t rows) {
    return biases ? b.expert_bias(layer_name(pattern, l), e, int(n), rows) : nullptr;
  };
  for (int e = 0; e < int(n) && names.experts_input_major; ++e) {
    ExpertWeights& x = layer.experts[size_t(e)];
    const std::string gate_up = layer_name(names.expert_gate, l), gate_up_bias = layer_name(names.expert_gate_bias, l);
    auto strided_bias = [&](const std::string& name, int64_t rows, int step, int offset) {
      return biases ? b.strided_expert_bias(name, e, int(n), rows, step, offset) : nullptr;
    };
    // Floats stored input-major, or MXFP4 blocks stored output-major.
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, int step, int offset) {
      return b.find(name + "_blocks") ? b.mxfp4_expert(name, e, int(n), rows, cols, step, offset)
                                      : b.input_major_expert(name, e, int(n), rows, cols, step, offset);
    };
    x.gate = b.rows_with_bias(matrix(gate_up, f, d, 2, 0), first, count, strided_bias(gate_up_bias, f, 2, 0));
    x.up = b.rows_with_bias(matrix(gate_up, f, d, 2, 1), first, count, strided_bias(gate_up_bias, f, 2, 1));
    x.down = output_projection(b, shard, matrix(layer_name(names.expert_down, l), d, f, 1, 0), first, count,
                               strided_bias(layer_name(names.expert_down_bias, l), d, 1, 0));
  }
  for (int e = 0; e < int(n) && !names.experts_input_major; ++e) {
    ExpertWeights& x = layer.experts[size_t(e)];
    x.gate = b.rows_with_bias(b.expert_linear(layer_name(names.expert_gate, l), e, int(n), f, d), first, count,
                              bias(names.expert_gate_bias, e, f));
    x.up = b.rows_with_bias(b.expert_linear(layer_name(names.expert_up, l), e, int(n), f, d), first, count,
                            bias(names.expert_up_bias, e, f));
    x.down = output_projection(b, shard, b.expert_linear(layer_name(names.expert_down, l), e, int(n), d, f), first, count,
                               bias(names.expert_down_bias, e, d));
  }
}

// A shared expert: a whole gated FFN of its own width beside the routed
// ones, and its gate's row. Under tensor parallelism every rank holds it
// whole and computes it alike (it is one FFN beside many experts).
void bind_shared_expert(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b,
                        LayerWeights& layer) {
  const int64_t d = spec.d_model, f = spec.moe.shared_ffn_dim;
  if (names.shared_gate.empty()) throw Error(b.source_name() + ": " + spec.architecture + " has no shared-expert form");
  layer.shared.gate = b.rows_of(b.linear(layer_name(names.shared_gate, l), f, d), 0, f, "", false);
  layer.shared.up = b.rows_of(b.linear(layer_name(names.shared_up, l), f, d), 0, f, "", false);
  layer.shared.down = b.rows_of(b.linear(layer_name(names.shared_down, l), d, f), 0, d, "", false);
  layer.shared_gate = b.rows_of(b.single_row(layer_name(names.shared_expert_gate, l), d), 0, 1, "", false);
}

}  // namespace tessera::binding
