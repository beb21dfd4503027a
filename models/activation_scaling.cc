#include "models/activation_scaling.h"

#include <algorithm>
#include <optional>

#include "engine/core/error.h"

namespace tessera {
namespace {

// One scaled input of a layer: the observation point, the weights reading
// it, and where 1/s goes.
struct InputGroup {
  const char* point;
  std::vector<std::string> weights;
  std::string norm;  // fold into this norm, or
  std::string rows;  // into these rows (and `bias`)
  std::string bias;
  std::string down;                // set for a gate and up pair: the projection their product feeds
  bool shares_value_rows = false;  // o's input under grouped queries (value_row_of_column)
};

// For each column of o's input, the row of v that feeds it: query head h
// reads value head h / (n_heads / n_kv_heads).
std::vector<int64_t> value_row_of_column(const DecoderSpec& spec) {
  if (spec.n_kv_heads <= 0 || spec.n_heads % spec.n_kv_heads != 0 || spec.head_dim <= 0)
    throw Error("activation-aware scaling: " + std::to_string(spec.n_heads) + " query heads do not share " +
                std::to_string(spec.n_kv_heads) + " value heads evenly");
  const int64_t per_group = spec.n_heads / spec.n_kv_heads, head_dim = spec.head_dim;
  std::vector<int64_t> rows(size_t(spec.n_heads * head_dim));
  for (size_t j = 0; j < rows.size(); ++j) {
    const int64_t head = int64_t(j) / head_dim;
    rows[j] = head / per_group * head_dim + int64_t(j) % head_dim;
  }
  return rows;
}

std::vector<InputGroup> layer_groups(const DecoderSpec& spec, const WeightNames& names, int l) {
  const auto at = [l](const std::string& pattern) { return pattern.empty() ? pattern : layer_name(pattern, l); };
  std::vector<InputGroup> groups = {
      {"attn_norm", {at(names.q), at(names.k), at(names.v)}, at(names.attn_norm), "", ""},
      {"ffn_norm", {at(names.gate), at(names.up)}, at(names.ffn_norm), "", "", at(names.down)},
      {"ffn_act", {at(names.down)}, "", at(names.up), at(names.up_bias)},
  };
  groups.push_back(
      {"attention", {at(names.o)}, "", at(names.v), at(names.v_bias), "", spec.n_heads != spec.n_kv_heads});
  return groups;
}

// The gate-up product's view of the down projection `name`, (hidden, inter):
// how much each intermediate channel's error reaches the output.
quant::GatedPair gated_pair(const DecoderSpec& spec, const TensorSource& source, const std::string& name,
                            const QuantizeCalibration& calibration) {
  if (!calibration.gated) throw Error("activation-aware scaling: no gated activation to measure gate and up with");
  const auto t = source.find(name);
  if (!t || t->shape.size() != 2) throw Error("tensor '" + name + "' missing or misshaped");
  const std::vector<float> down = tensor_as_f32(name, *t);
  const int64_t inter = t->shape[1];
  quant::GatedPair pair;
  pair.channel_weights.assign(size_t(inter), 0.0f);
  for (size_t i = 0; i < down.size(); ++i) pair.channel_weights[i % size_t(inter)] += down[i] * down[i];
  pair.product = [&calibration, act = gated_activation_op(spec.activation)](const float* gate, const float* up,
                                                                            int64_t n, float* out) {
    calibration.gated(act, gate, up, n, out);
  };
  return pair;
}

// One scale per shared index, from the (cols) scales of the columns sharing it.
std::vector<float> shared_scales(const std::vector<float>& scales, const std::vector<int64_t>& shared) {
  std::vector<float> out(size_t(*std::max_element(shared.begin(), shared.end()) + 1), 1.0f);
  for (size_t j = 0; j < shared.size(); ++j) out[size_t(shared[j])] = scales[j];
  return out;
}

}  // namespace

ScalingPlan plan_activation_scaling(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                    const quant::SchemeChoice& scheme, const QuantizeCalibration& calibration) {
  if (!names.qkv.empty() || !names.gate_up.empty() || names.q.empty() || names.gate.empty()) {
    throw Error("activation-aware scaling needs separate q/k/v and gate/up weights (" + spec.architecture +
                " fuses them)");
  }
  ScalingPlan plan;
  for (int l = 0; l < spec.n_layers; ++l) {
    const quant::IntQuantConfig& weights_config = scheme.layer_weights(l, spec.n_layers);
    for (const InputGroup& g : layer_groups(spec, names, l)) {
      const std::string key = std::string(g.point) + "/" + std::to_string(l);
      const auto stats = calibration.inputs.find(key);
      if (stats == calibration.inputs.end()) throw Error("calibration saw no activations at " + key);
      std::vector<std::vector<float>> values;
      std::vector<std::pair<const float*, int64_t>> weights;
      for (const std::string& name : g.weights) {
        const auto t = source.find(name);
        if (!t || t->shape.size() != 2 || t->shape[1] != stats->second.width())
          throw Error("tensor '" + name + "' missing or misshaped");
        values.push_back(tensor_as_f32(name, *t));
        weights.emplace_back(values.back().data(), t->shape[0]);
      }
      quant::InputOptions options;
      for (const std::string& name : g.weights) {
        options.activations.push_back(name == layer_name(names.v, l) ? scheme.value.activation
                                                                     : weights_config.activation);
      }
      const std::optional<quant::GatedPair> gated =
          g.down.empty() ? std::nullopt : std::optional(gated_pair(spec, source, g.down, calibration));
      options.gated = gated ? &*gated : nullptr;
      if (g.shares_value_rows) options.shared_scale = value_row_of_column(spec);
      const quant::ScaleSearch found =
          quant::search_input_scales(weights, stats->second, weights_config, calibration.matmul, options);
      plan.reports.push_back({key, found.alpha, found.error, found.plain_error});
      for (size_t i = 0; i < g.weights.size(); ++i) {
        plan.clips[g.weights[i]] = found.clips[i];
        plan.fits[g.weights[i]] = found.fits[i];
        plan.importance[g.weights[i]] = found.importance;
      }
      if (found.alpha == 0) continue;
      for (const std::string& name : g.weights) plan.column_scales[name] = found.scales;
      if (!g.norm.empty()) plan.norm_divisors[g.norm] = found.scales;
      const std::vector<float> row_scales =
          g.shares_value_rows ? shared_scales(found.scales, options.shared_scale) : found.scales;
      if (!g.rows.empty()) plan.row_divisors[g.rows] = row_scales;
      if (!g.bias.empty() && source.find(g.bias)) plan.row_divisors[g.bias] = row_scales;
    }
  }
  return plan;
}

}  // namespace tessera
