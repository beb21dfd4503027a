#pragma once
// One entry per supported architecture: how to fill a DecoderSpec from GGUF
// metadata or a Hugging Face config.json, and the weight names in each format.
// Each architecture lives in its own small file under models/arch/ and is
// registered by one line of models/arch/architectures.def.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "models/decoder_spec.h"

namespace tessera {

namespace gguf {
class File;
}

// Names of one checkpoint format; per-layer names contain "{}" for the
// layer. An empty name: the format has no such tensor.
struct WeightNames {
  std::string token_embedding, output_norm, output;
  std::string attn_norm, q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm, post_attn_norm;
  std::string sinks;  // (n_heads): attention sinks
  std::string qkv;  // Q, K and V rows in one matrix (split at load), instead of q, k and v
  std::string ffn_norm, gate, up, down, gate_bias, up_bias, down_bias, post_ffn_norm;
  std::string gate_up;  // gate rows then up rows in one matrix, instead of gate and up
  // Mixture of experts: the router, (n_experts, d_model), and each expert's
  // gate, up and down. A name with "{x}" is one expert's matrix ("{x}" the
  // expert); one without is every expert's, (n_experts, rows, cols).
  std::string router, expert_gate, expert_up, expert_down;
  // Their biases (MoeSpec::biases): the router's (n_experts), each expert's
  // ("{x}") or every expert's stacked, (n_experts, rows).
  std::string router_bias, expert_gate_bias, expert_up_bias, expert_down_bias;
  // gpt-oss's Hugging Face form: expert_gate and expert_up name one
  // (n_experts, d_model, 2 * ffn) tensor, input-major, gate and up channels
  // interleaved (and its bias, (n_experts, 2 * ffn), likewise); expert_down
  // is (n_experts, ffn, d_model).
  bool experts_input_major = false;
  // The shared expert (MoeSpec::shared_ffn_dim): its gate, up and down, and
  // the one row, (d_model) or (1, d_model), whose sigmoid scales its output.
  std::string shared_gate, shared_up, shared_down, shared_expert_gate;
  // Tensors a checkpoint may carry that the computation derives itself
  // (transformers' old rotary inv_freq buffers).
  std::vector<std::string> derived;
};

struct Architecture {
  std::string_view gguf_name;                    // general.architecture; empty when there is no GGUF form
  std::vector<std::string_view> hf_model_types;  // config.json model_type
  void (*spec_from_gguf)(const gguf::File& file, DecoderSpec* spec);
  void (*spec_from_hf)(const nlohmann::json& config, DecoderSpec* spec);
  WeightNames gguf_names;
  WeightNames hf_names;
  // The config.json that describes `spec` (read back by spec_from_hf), for
  // writing a GGUF model as a Hugging Face directory; null where not offered.
  nlohmann::json (*hf_config_from_spec)(const DecoderSpec& spec) = nullptr;
};

// The registered architectures (models/arch/architectures.def).
const std::vector<Architecture>& architectures();
// Throws tessera::Error listing the supported names when none matches.
const Architecture& find_architecture_for_gguf(std::string_view name);
const Architecture& find_architecture_for_hf(std::string_view model_type);

// The layer's name: "{}" replaced by the layer index.
std::string layer_name(const std::string& pattern, int layer);
// An expert's name: "{x}" replaced by the expert index.
std::string expert_name(const std::string& pattern, int expert);

// Shared by the architecture files. llama.cpp's names, MoE layers' included.
WeightNames standard_gguf_names();
WeightNames llama_hf_names();
// Qwen's MoE checkpoints (Qwen2-MoE, Qwen3-MoE): Llama's names with the
// router as mlp.gate, each expert's projections, and the shared expert.
WeightNames qwen_moe_hf_names();
// Llama's names plus Gemma's norms after attention and around the FFN.
WeightNames gemma_hf_names();
// A number of config.json, 0 when absent or null (the softcaps).
float optional_hf_number(const nlohmann::json& config, const char* key);
// A positive integer of config.json; throws tessera::Error naming `key`.
int required_hf_count(const nlohmann::json& config, const char* key);
void fill_common_gguf(const gguf::File& file, const std::string& arch, DecoderSpec* spec);
// The experts of a GGUF MoE model: ARCH.expert_count, expert_used_count and,
// where the file has it, expert_feed_forward_length as the FFN width.
void fill_gguf_experts(const gguf::File& file, const std::string& arch, DecoderSpec* spec);
// Reads what every Hugging Face decoder config shares, honouring
// attention_bias, mlp_bias, partial_rotary_factor and rope_scaling.
void fill_common_hf(const nlohmann::json& config, DecoderSpec* spec);
// After the architecture has filled the spec: refuses config.json flags that
// would change the computation in a way the spec does not follow
// (hidden_act, rope_scaling …), naming the flag. quantization_config is
// quant/schemes.h's to read.
void refuse_unhonoured_hf_flags(const nlohmann::json& config, const DecoderSpec& spec);
// The config.json fields fill_common_hf reads, for a spec with Llama's
// computation (SwiGLU, RMSNorm, plain rotary or linear scaling). Throws
// tessera::Error naming what such a config cannot state.
nlohmann::json common_hf_config(const DecoderSpec& spec, const char* model_type, const char* class_name);

}  // namespace tessera
