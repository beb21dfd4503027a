#include "models/architecture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/core/error.h"
#include "models/rope_frequencies.h"
#include "models/gguf/gguf_file.h"

namespace tessera {

namespace {

std::string supported_list(bool hf) {
  std::string names;
  for (const Architecture& a : architectures()) {
    if (hf) {
      for (std::string_view t : a.hf_model_types) names += (names.empty() ? "" : ", ") + std::string(t);
    } else if (!a.gguf_name.empty()) {
      names += (names.empty() ? "" : ", ") + std::string(a.gguf_name);
    }
  }
  return names;
}

}  // namespace

const Architecture& find_architecture_for_gguf(std::string_view name) {
  for (const Architecture& a : architectures()) {
    if (!a.gguf_name.empty() && a.gguf_name == name && a.spec_from_gguf) return a;
  }
  throw Error("architecture '" + std::string(name) + "' is not supported (supported: " + supported_list(false) + ")");
}

const Architecture& find_architecture_for_hf(std::string_view model_type) {
  for (const Architecture& a : architectures()) {
    for (std::string_view t : a.hf_model_types) {
      if (t == model_type) return a;
    }
  }
  throw Error("model_type '" + std::string(model_type) + "' is not supported (supported: " + supported_list(true) + ")");
}

std::string layer_name(const std::string& pattern, int layer) {
  const size_t at = pattern.find("{}");
  if (at == std::string::npos) return pattern;
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

std::string expert_name(const std::string& pattern, int expert) {
  const size_t at = pattern.find("{x}");
  if (at == std::string::npos) return pattern;
  return pattern.substr(0, at) + std::to_string(expert) + pattern.substr(at + 3);
}

WeightNames standard_gguf_names() {
  WeightNames n;
  n.token_embedding = "token_embd.weight";
  n.output_norm = "output_norm.weight";
  n.output = "output.weight";
  n.attn_norm = "blk.{}.attn_norm.weight";
  n.q = "blk.{}.attn_q.weight";
  n.k = "blk.{}.attn_k.weight";
  n.v = "blk.{}.attn_v.weight";
  n.o = "blk.{}.attn_output.weight";
  n.q_bias = "blk.{}.attn_q.bias";
  n.k_bias = "blk.{}.attn_k.bias";
  n.v_bias = "blk.{}.attn_v.bias";
  n.o_bias = "blk.{}.attn_output.bias";
  n.q_norm = "blk.{}.attn_q_norm.weight";
  n.k_norm = "blk.{}.attn_k_norm.weight";
  n.post_attn_norm = "blk.{}.post_attention_norm.weight";
  n.ffn_norm = "blk.{}.ffn_norm.weight";
  n.gate = "blk.{}.ffn_gate.weight";
  n.up = "blk.{}.ffn_up.weight";
  n.down = "blk.{}.ffn_down.weight";
  n.post_ffn_norm = "blk.{}.post_ffw_norm.weight";
  n.gate_bias = "blk.{}.ffn_gate.bias";
  n.up_bias = "blk.{}.ffn_up.bias";
  n.down_bias = "blk.{}.ffn_down.bias";
  // MoE layers (read only when the spec has experts): the experts stacked.
  n.router = "blk.{}.ffn_gate_inp.weight";
  n.expert_gate = "blk.{}.ffn_gate_exps.weight";
  n.expert_up = "blk.{}.ffn_up_exps.weight";
  n.expert_down = "blk.{}.ffn_down_exps.weight";
  n.router_bias = "blk.{}.ffn_gate_inp.bias";
  n.expert_gate_bias = "blk.{}.ffn_gate_exps.bias";
  n.expert_up_bias = "blk.{}.ffn_up_exps.bias";
  n.expert_down_bias = "blk.{}.ffn_down_exps.bias";
  n.sinks = "blk.{}.attn_sinks.weight";
  // A shared expert (read only when the spec has one).
  n.shared_gate = "blk.{}.ffn_gate_shexp.weight";
  n.shared_up = "blk.{}.ffn_up_shexp.weight";
  n.shared_down = "blk.{}.ffn_down_shexp.weight";
  n.shared_expert_gate = "blk.{}.ffn_gate_inp_shexp.weight";
  return n;
}

WeightNames qwen_moe_hf_names() {
  WeightNames n = llama_hf_names();
  n.router = "model.layers.{}.mlp.gate.weight";
  n.expert_gate = "model.layers.{}.mlp.experts.{x}.gate_proj.weight";
  n.expert_up = "model.layers.{}.mlp.experts.{x}.up_proj.weight";
  n.expert_down = "model.layers.{}.mlp.experts.{x}.down_proj.weight";
  n.shared_gate = "model.layers.{}.mlp.shared_expert.gate_proj.weight";
  n.shared_up = "model.layers.{}.mlp.shared_expert.up_proj.weight";
  n.shared_down = "model.layers.{}.mlp.shared_expert.down_proj.weight";
  n.shared_expert_gate = "model.layers.{}.mlp.shared_expert_gate.weight";
  return n;
}

WeightNames llama_hf_names() {
  WeightNames n;
  n.token_embedding = "model.embed_tokens.weight";
  n.output_norm = "model.norm.weight";
  n.output = "lm_head.weight";
  n.attn_norm = "model.layers.{}.input_layernorm.weight";
  n.q = "model.layers.{}.self_attn.q_proj.weight";
  n.k = "model.layers.{}.self_attn.k_proj.weight";
  n.v = "model.layers.{}.self_attn.v_proj.weight";
  n.o = "model.layers.{}.self_attn.o_proj.weight";
  n.q_bias = "model.layers.{}.self_attn.q_proj.bias";
  n.k_bias = "model.layers.{}.self_attn.k_proj.bias";
  n.v_bias = "model.layers.{}.self_attn.v_proj.bias";
  n.o_bias = "model.layers.{}.self_attn.o_proj.bias";
  n.q_norm = "model.layers.{}.self_attn.q_norm.weight";
  n.k_norm = "model.layers.{}.self_attn.k_norm.weight";
  n.ffn_norm = "model.layers.{}.post_attention_layernorm.weight";
  n.gate = "model.layers.{}.mlp.gate_proj.weight";
  n.up = "model.layers.{}.mlp.up_proj.weight";
  n.down = "model.layers.{}.mlp.down_proj.weight";
  n.gate_bias = "model.layers.{}.mlp.gate_proj.bias";
  n.up_bias = "model.layers.{}.mlp.up_proj.bias";
  n.down_bias = "model.layers.{}.mlp.down_proj.bias";
  n.derived = {"model.layers.{}.self_attn.rotary_emb.inv_freq"};
  return n;
}

WeightNames gemma_hf_names() {
  WeightNames n = llama_hf_names();
  n.post_attn_norm = "model.layers.{}.post_attention_layernorm.weight";
  n.ffn_norm = "model.layers.{}.pre_feedforward_layernorm.weight";
  n.post_ffn_norm = "model.layers.{}.post_feedforward_layernorm.weight";
  return n;
}

float optional_hf_number(const nlohmann::json& config, const char* key) {
  return config.contains(key) && config[key].is_number() ? config[key].get<float>() : 0.0f;
}

int required_hf_count(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_number_integer()) throw Error(std::string("config.json: '") + key + "' missing or not an integer");
  const int64_t v = config[key].get<int64_t>();
  if (v <= 0 || v > INT32_MAX) throw Error(std::string("config.json: '") + key + "' out of range");
  return int(v);
}

namespace {

// YaRN as llama.cpp applies it: the blend over the pairs between the
// corrected dimensions of beta_fast and beta_slow rotations in the original
// context, and the magnitude factor it computes, in its float arithmetic.
void fill_gguf_yarn(const gguf::File& file, const std::string& arch, DecoderSpec* spec) {
  const std::string key = arch + ".rope.scaling.";
  const auto context = file.get_uint(key + "original_context_length");
  if (!context || *context == 0 || *context > uint64_t(INT32_MAX)) {
    throw Error(file.name() + ": key '" + key + "original_context_length': missing or out of range for YaRN");
  }
  const float fast = float(file.get_float(key + "yarn_beta_fast").value_or(32.0));
  const float slow = float(file.get_float(key + "yarn_beta_slow").value_or(1.0));
  const float dims = float(spec->rope.dim), base = spec->rope.base, original = float(*context);
  const auto corr_dim = [&](float rotations) { return dims * std::log(original / (rotations * 2.0f * float(M_PI))) / (2.0f * std::log(base)); };
  spec->rope.ext_factor = 1.0f;
  spec->rope.corr_low = std::max(0.0f, std::floor(corr_dim(fast)));
  spec->rope.corr_high = std::min(dims - 1.0f, std::ceil(corr_dim(slow)));
  // llama.cpp's attn_factor cancels the magnitude its rope applies, then
  // scales by the file's own factor.
  const float factor = 1.0f / spec->rope.freq_scale;
  const float magnitude = factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f;
  spec->rope.attn_factor = magnitude * (1.0f / (1.0f + 0.1f * std::log(factor))) *
                           float(file.get_float(key + "attn_factor").value_or(1.0));
}

}  // namespace

void fill_common_gguf(const gguf::File& file, const std::string& arch, DecoderSpec* spec) {
  auto required = [&](const std::string& key) -> int {
    const auto v = file.get_uint(arch + "." + key);
    if (!v) throw Error(file.name() + ": key '" + arch + "." + key + "': missing");
    if (*v > uint64_t(INT32_MAX)) throw Error(file.name() + ": key '" + arch + "." + key + "': value too large");
    return int(*v);
  };
  auto optional = [&](const std::string& key, int fallback) {
    const auto v = file.get_uint(arch + "." + key);
    return (v && *v <= uint64_t(INT32_MAX)) ? int(*v) : fallback;
  };
  spec->architecture = arch;
  spec->n_layers = required("block_count");
  spec->d_model = required("embedding_length");
  spec->ffn_dim = required("feed_forward_length");
  spec->n_heads = required("attention.head_count");
  spec->n_kv_heads = optional("attention.head_count_kv", spec->n_heads);
  spec->head_dim = optional("attention.key_length", spec->n_heads > 0 ? spec->d_model / spec->n_heads : 0);
  spec->max_context = optional("context_length", 4096);
  spec->vocab_size = optional("vocab_size", 0);
  spec->norm_eps = float(file.get_float(arch + ".attention.layer_norm_rms_epsilon").value_or(1e-5));
  spec->rope.base = float(file.get_float(arch + ".rope.freq_base").value_or(10000.0));
  spec->rope.dim = optional("rope.dimension_count", spec->head_dim);
  spec->rope.recipe = RopeRecipe::kGgml;
  const std::string scaling = file.get_string(arch + ".rope.scaling.type").value_or("none");
  if (scaling == "linear" || scaling == "yarn") {
    const double factor = file.get_float(arch + ".rope.scaling.factor").value_or(1.0);
    if (!(factor > 0.0)) throw Error(file.name() + ": key '" + arch + ".rope.scaling.factor': must be positive");
    spec->rope.freq_scale = 1.0f / float(factor);  // in float, as llama.cpp
  }
  if (scaling == "yarn") fill_gguf_yarn(file, arch, spec);
  spec->sliding_window.assign(size_t(std::max(spec->n_layers, 0)), 0);
}

void fill_gguf_experts(const gguf::File& file, const std::string& arch, DecoderSpec* spec) {
  auto count = [&](const std::string& key) -> int {
    const auto v = file.get_uint(arch + "." + key);
    if (!v) throw Error(file.name() + ": key '" + arch + "." + key + "': missing");
    if (*v > 4096) throw Error(file.name() + ": key '" + arch + "." + key + "': " + std::to_string(*v) + " is out of range");
    return int(*v);
  };
  spec->moe.n_experts = count("expert_count");
  spec->moe.top_k = count("expert_used_count");
  if (const auto width = file.get_uint(arch + ".expert_feed_forward_length")) {
    if (*width == 0 || *width > uint64_t(INT32_MAX)) throw Error(file.name() + ": key '" + arch + ".expert_feed_forward_length': out of range");
    spec->ffn_dim = int(*width);
  }
}

void fill_common_hf(const nlohmann::json& config, DecoderSpec* spec) {
  auto required = [&](const char* key) { return required_hf_count(config, key); };
  auto optional = [&](const char* key, int fallback) {
    return config.contains(key) && config[key].is_number_integer() ? int(config[key].get<int64_t>()) : fallback;
  };
  spec->architecture = config.value("model_type", "");
  spec->n_layers = required("num_hidden_layers");
  spec->d_model = required("hidden_size");
  spec->ffn_dim = required("intermediate_size");
  spec->n_heads = required("num_attention_heads");
  spec->n_kv_heads = optional("num_key_value_heads", spec->n_heads);
  spec->head_dim = optional("head_dim", spec->d_model / spec->n_heads);
  spec->vocab_size = required("vocab_size");
  spec->max_context = optional("max_position_embeddings", 4096);
  spec->norm_eps = config.value("rms_norm_eps", 1e-6f);
  spec->tied_embeddings = config.value("tie_word_embeddings", false);
  spec->qkv_bias = spec->o_bias = config.value("attention_bias", false);
  spec->mlp_bias = config.value("mlp_bias", false);
  const double partial = config.value("partial_rotary_factor", 1.0);
  if (!(partial > 0.0 && partial <= 1.0)) throw Error("config.json: 'partial_rotary_factor' must be in (0, 1]");
  spec->rope.pairing = RotaryPairing::kHalves;
  spec->rope.recipe = RopeRecipe::kTransformers;
  // transformers 5 writes rope_theta and the scaling together as
  // rope_parameters, per layer type where the types differ (the full
  // attention layers' here).
  nlohmann::json parameters = config.value("rope_parameters", nlohmann::json());
  if (parameters.is_object() && parameters.contains("full_attention")) parameters = parameters["full_attention"];
  const nlohmann::json scaling = config.value("rope_scaling", nlohmann::json());
  const nlohmann::json& theta_from = config.contains("rope_theta") || !parameters.is_object() ? config : parameters;
  spec->rope.base = theta_from.value("rope_theta", 10000.0f);
  spec->rope.dim = int(double(spec->head_dim) * partial);
  spec->rope.inv_freq = transformers_inv_freq(spec->rope.base, spec->rope.dim, scaling.is_object() ? scaling : parameters);
  spec->rope.attn_factor = transformers_rope_attention_factor(scaling.is_object() ? scaling : parameters);
  spec->sliding_window.assign(size_t(spec->n_layers), 0);
}

namespace {

// transformers' activation names and the gated activation each gives.
bool activation_matches(const std::string& name, FfnActivation activation) {
  if (name == "silu" || name == "swish") return activation == FfnActivation::kSwiGlu || activation == FfnActivation::kSwiGluClampedOai;
  if (name == "gelu_pytorch_tanh" || name == "gelu_tanh") return activation == FfnActivation::kGeGluTanh;
  return false;
}

}  // namespace

void refuse_unhonoured_hf_flags(const nlohmann::json& config, const DecoderSpec& spec) {
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    const std::string name = config[key].is_string() ? config[key].get<std::string>() : config[key].dump();
    if (!activation_matches(name, spec.activation)) {
      throw Error(std::string("config.json: '") + key + "': " + name + " is not supported for " + spec.architecture);
    }
  }
  if (config.value("attention_bias", false) && !(spec.qkv_bias && spec.o_bias)) {
    throw Error("config.json: 'attention_bias' is not supported for " + spec.architecture);
  }
  if (config.value("mlp_bias", false) && !spec.mlp_bias) {
    throw Error("config.json: 'mlp_bias' is not supported for " + spec.architecture);
  }
}

namespace {

// The shortest decimal that reads back as `value` in float, so config.json
// says 1e-05, not 9.999999747378752e-06.
double shortest_decimal(float value) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, double(value));
    if (std::strtof(text, nullptr) == value) break;
  }
  return std::strtod(text, nullptr);
}

void refuse_unless(bool holds, const DecoderSpec& spec, const char* what) {
  if (!holds) throw Error("a " + spec.architecture + " model with " + what + " cannot be described by config.json here");
}

}  // namespace

nlohmann::json common_hf_config(const DecoderSpec& spec, const char* model_type, const char* class_name) {
  refuse_unless(spec.activation == FfnActivation::kSwiGlu, spec, "a GeGLU feed-forward");
  refuse_unless(spec.moe.n_experts == 0, spec, "experts");
  refuse_unless(spec.rope.freq_factors.empty(), spec, "per-pair rotary frequency factors");
  refuse_unless(spec.norm_weight_offset == 0.0f && spec.embedding_scale == 1.0f && spec.attention_scale == 0.0f, spec,
                "scaled norms, embeddings or attention");
  refuse_unless(!spec.qk_norm && !spec.post_attention_norm && !spec.post_ffn_norm, spec, "extra norms");
  refuse_unless(spec.attn_softcap == 0.0f && spec.final_logit_softcap == 0.0f, spec, "softcapping");
  refuse_unless(spec.qkv_bias == spec.o_bias, spec, "biases on q/k/v but not on the output projection");
  refuse_unless(spec.head_dim > 0 && spec.rope.dim > 0 && spec.rope.dim <= spec.head_dim, spec, "this rotary width");
  // A spec read from a config.json holds its scaling in inv_freq alone.
  refuse_unless(spec.rope.inv_freq.empty() || spec.rope.inv_freq == transformers_inv_freq(spec.rope.base, spec.rope.dim, nullptr),
                spec, "scaled rotary frequencies of a config.json");
  nlohmann::json c = {{"architectures", {class_name}},
                      {"model_type", model_type},
                      {"hidden_size", spec.d_model},
                      {"intermediate_size", spec.ffn_dim},
                      {"num_hidden_layers", spec.n_layers},
                      {"num_attention_heads", spec.n_heads},
                      {"num_key_value_heads", spec.n_kv_heads},
                      {"head_dim", spec.head_dim},
                      {"vocab_size", spec.vocab_size},
                      {"max_position_embeddings", spec.max_context},
                      {"rms_norm_eps", shortest_decimal(spec.norm_eps)},
                      {"rope_theta", shortest_decimal(spec.rope.base)},
                      {"rope_scaling", nullptr},
                      {"hidden_act", "silu"},
                      {"attention_bias", spec.qkv_bias && spec.o_bias},
                      {"mlp_bias", spec.mlp_bias},
                      {"tie_word_embeddings", spec.tied_embeddings},
                      {"torch_dtype", "float32"}};
  if (spec.rope.dim != spec.head_dim) c["partial_rotary_factor"] = double(spec.rope.dim) / spec.head_dim;
  if (spec.rope.freq_scale != 1.0f) {
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", shortest_decimal(1.0f / spec.rope.freq_scale)}};
  }
  return c;
}

}  // namespace tessera
