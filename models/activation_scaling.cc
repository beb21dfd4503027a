#include "models/activation_scaling.h"

#include "engine/error.h"

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
  bool scaled = true;  // false: nowhere to fold 1/s; only clips and fits
};

std::vector<InputGroup> layer_groups(const DecoderSpec& spec, const WeightNames& names, int l) {
  const auto at = [l](const std::string& pattern) { return pattern.empty() ? pattern : layer_name(pattern, l); };
  std::vector<InputGroup> groups = {
      {"attn_norm", {at(names.q), at(names.k), at(names.v)}, at(names.attn_norm), "", ""},
      {"ffn_norm", {at(names.gate), at(names.up)}, at(names.ffn_norm), "", ""},
      {"ffn_act", {at(names.down)}, "", at(names.up), at(names.up_bias)},
  };
  if (spec.n_heads == spec.n_kv_heads)
    groups.push_back({"attention", {at(names.o)}, "", at(names.v), at(names.v_bias)});
  else
    groups.push_back({"attention", {at(names.o)}, "", "", "", false});
  return groups;
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
      std::vector<ActivationPolicy> policies;
      for (const std::string& name : g.weights) {
        policies.push_back(name == layer_name(names.v, l) ? scheme.value.activation : scheme.layers.activation);
      }
      const quant::ScaleSearch found =
          quant::search_input_scales(weights, stats->second, scheme.layers, calibration.matmul, policies, g.scaled);
      plan.reports.push_back({key, found.alpha, found.error, found.plain_error});
      for (size_t i = 0; i < g.weights.size(); ++i) {
        plan.clips[g.weights[i]] = found.clips[i];
        plan.fits[g.weights[i]] = found.fits[i];
        plan.importance[g.weights[i]] = found.importance;
      }
      if (found.alpha == 0) continue;
      for (const std::string& name : g.weights) plan.column_scales[name] = found.scales;
      if (!g.norm.empty()) plan.norm_divisors[g.norm] = found.scales;
      if (!g.rows.empty()) plan.row_divisors[g.rows] = found.scales;
      if (!g.bias.empty() && source.find(g.bias)) plan.row_divisors[g.bias] = found.scales;
    }
  }
  return plan;
}

}  // namespace tessera
