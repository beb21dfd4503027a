#pragma once
// Plans activation-aware scaling for a checkpoint: for each layer, the scale
// of each scaled input (quant/activation_aware.h), and where its inverse is
// folded: the norm before q/k/v and before gate/up (weight g becomes
// (g + offset) / s - offset, offset 1 for Gemma's (1 + g) norms), the up
// projection's rows before down, and v's rows (and bias) before o. Under
// grouped queries one v row feeds a channel of every query head of its
// group, so those channels share one scale.
#include <map>
#include <string>
#include <vector>

#include "models/architecture.h"
#include "models/quantize_checkpoint.h"
#include "models/tensor_source.h"

namespace tessera {

struct ScalingPlan {
  std::map<std::string, std::vector<float>> column_scales;  // linear -> s (cols): quantize W diag(s)
  std::map<std::string, std::vector<float>> row_divisors;   // tensor -> d (rows): row r divided by d[r]
  std::map<std::string, std::vector<float>> norm_divisors;  // norm -> s: (g + offset) / s - offset
  std::map<std::string, std::vector<float>> clips;  // linear -> (rows): range fraction each channel's groups keep
  // linear -> (rows): how each channel's 4-bit groups are fit
  std::map<std::string, std::vector<quant::RangeFit>> fits;
  std::map<std::string, std::vector<float>> importance;  // linear -> (cols): mean square of each scaled input
  std::vector<ScaledInputReport> reports;
};

// Throws tessera::Error for architectures with fused q/k/v or gate/up, or
// calibration that misses an input.
ScalingPlan plan_activation_scaling(const DecoderSpec& spec, const WeightNames& names, const TensorSource& source,
                                    const quant::SchemeChoice& scheme, const QuantizeCalibration& calibration);

}  // namespace tessera
