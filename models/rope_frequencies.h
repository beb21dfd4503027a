#pragma once
// Rotary frequencies of Hugging Face checkpoints, computed in float32 step by
// step as transformers computes them, so the angles agree to the last bit
// where float32 arithmetic allows.
#include <nlohmann/json.hpp>
#include <vector>

namespace tessera {

// inv_freq[i] = 1 / base^(2i / dim), then the config's rope_scaling applied
// (none, "default", "linear", "llama3" or "yarn"; other types are refused
// with tessera::Error naming them).
std::vector<float> transformers_inv_freq(float base, int dim, const nlohmann::json& rope_scaling);

// The factor transformers multiplies cosines and sines by: YaRN's
// attention_factor (given, or 0.1 ln(factor) + 1), else 1.
float transformers_rope_attention_factor(const nlohmann::json& rope_scaling);

}  // namespace tessera
