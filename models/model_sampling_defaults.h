#pragma once
// The sampling values a checkpoint recommends: Hugging Face's
// generation_config.json (temperature, top_p, top_k, min_p,
// repetition_penalty) or a GGUF file's general.sampling.* keys (temp, top_p,
// top_k, min_p, penalty_repeat), as vLLM and llama.cpp read them. A value of
// the wrong type or outside what a request may ask for is left out, and
// said in `dropped`: a recommendation never stops a model from loading.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/sampling_defaults.h"
#include "models/gguf/gguf_file.h"

namespace tessera {

struct ModelSamplingDefaults {
  SamplingDefaults values;
  std::vector<std::string> dropped;  // "generation_config.json: top_p 1.5 is outside (0, 1]"
};

ModelSamplingDefaults sampling_defaults_from_generation_config(const nlohmann::json& config, const std::string& where);
ModelSamplingDefaults sampling_defaults_from_gguf(const gguf::File& file);

}  // namespace tessera
