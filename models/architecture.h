#pragma once
// One entry per supported architecture: how to fill a DecoderSpec from GGUF
// metadata or a Hugging Face config.json, and the weight names in each format.
// Each architecture lives in its own small file under models/arch/.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "models/decoder_spec.h"

namespace tessera {

namespace gguf {
class File;
}

// Names of one checkpoint format; per-layer names contain "{}" for the layer.
struct WeightNames {
  std::string token_embedding, output_norm, output;
  std::string attn_norm, q, k, v, o, q_bias, k_bias, v_bias, q_norm, k_norm, post_attn_norm;
  std::string ffn_norm, gate, up, down, post_ffn_norm;
};

struct Architecture {
  std::string_view gguf_name;                  // general.architecture
  std::vector<std::string_view> hf_model_types;  // config.json model_type
  void (*spec_from_gguf)(const gguf::File& file, DecoderSpec* spec);
  void (*spec_from_hf)(const nlohmann::json& config, DecoderSpec* spec);
  WeightNames gguf_names;
  WeightNames hf_names;
};

// The registered architectures (see models/arch/).
std::vector<Architecture> architectures();
// Throws tessera::Error listing the supported names when none matches.
Architecture find_architecture_for_gguf(std::string_view name);
Architecture find_architecture_for_hf(std::string_view model_type);

// The layer's name: "{}" replaced by the layer index.
std::string layer_name(const std::string& pattern, int layer);

// Shared by the architecture files.
WeightNames standard_gguf_names();
WeightNames llama_hf_names();
void fill_common_gguf(const gguf::File& file, const std::string& arch, DecoderSpec* spec);
void fill_common_hf(const nlohmann::json& config, DecoderSpec* spec);

}  // namespace tessera
