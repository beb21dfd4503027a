#include "models/gguf_as_hf.h"

#include "engine/core/error.h"
#include "models/gguf_spec.h"
#include "models/model_sampling_defaults.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/tokenizer_json_writer.h"

namespace tessera {
namespace {

using Field = std::string WeightNames::*;

constexpr Field kFields[] = {
    &WeightNames::token_embedding, &WeightNames::output_norm, &WeightNames::output,    &WeightNames::attn_norm,
    &WeightNames::q,               &WeightNames::k,           &WeightNames::v,         &WeightNames::o,
    &WeightNames::q_bias,          &WeightNames::k_bias,      &WeightNames::v_bias,    &WeightNames::o_bias,
    &WeightNames::q_norm,          &WeightNames::k_norm,      &WeightNames::post_attn_norm, &WeightNames::qkv,
    &WeightNames::ffn_norm,        &WeightNames::gate,        &WeightNames::up,        &WeightNames::down,
    &WeightNames::gate_bias,       &WeightNames::up_bias,     &WeightNames::down_bias, &WeightNames::post_ffn_norm,
    &WeightNames::gate_up};

bool is_norm(Field f) {
  return f == &WeightNames::output_norm || f == &WeightNames::attn_norm || f == &WeightNames::q_norm || f == &WeightNames::k_norm ||
         f == &WeightNames::post_attn_norm || f == &WeightNames::ffn_norm || f == &WeightNames::post_ffn_norm;
}

// The fields that decide the computation; the Hugging Face config must give
// back what the GGUF metadata gave.
void check_same_model(const DecoderSpec& g, const DecoderSpec& h, const std::string& where) {
  const auto same = [&](bool equal, const char* what) {
    if (!equal) throw Error(where + ": the config.json written for it does not give back its " + what);
  };
  same(g.n_layers == h.n_layers && g.d_model == h.d_model && g.ffn_dim == h.ffn_dim, "sizes");
  same(g.n_heads == h.n_heads && g.n_kv_heads == h.n_kv_heads && g.head_dim == h.head_dim, "heads");
  same(g.vocab_size == h.vocab_size && g.max_context == h.max_context, "vocabulary or context");
  same(g.norm_eps == h.norm_eps && g.activation == h.activation, "norm epsilon or activation");
  same(g.rope.dim == h.rope.dim && g.rope.base == h.rope.base, "rotary dimensions or base");
  same(g.qkv_bias == h.qkv_bias && g.o_bias == h.o_bias && g.mlp_bias == h.mlp_bias, "biases");
  same(g.qk_norm == h.qk_norm && g.post_attention_norm == h.post_attention_norm && g.post_ffn_norm == h.post_ffn_norm, "norms");
  same(g.tied_embeddings == h.tied_embeddings && g.embedding_scale == h.embedding_scale, "embedding");
  same(g.sliding_window == h.sliding_window, "sliding windows");
  same(g.attn_softcap == h.attn_softcap && g.final_logit_softcap == h.final_logit_softcap, "softcaps");
}

// Row h*d + j*(d/2) + i of the Hugging Face matrix is row h*d + 2i + j of
// llama.cpp's (d rows per head, `width` values per row).
std::vector<float> unpair_rotary_rows(const std::vector<float>& gguf, int64_t rows, int64_t width, int heads) {
  const int64_t d = rows / heads, half = d / 2;
  std::vector<float> out(gguf.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const float* from = gguf.data() + (h * d + 2 * i + j) * width;
        std::copy(from, from + width, out.data() + (h * d + j * half + i) * width);
      }
    }
  }
  return out;
}

}  // namespace

GgufAsHf::GgufAsHf(const std::string& path) : file_(gguf::File::open(path)), raw_(file_) {
  const std::string arch_name = file_.get_string("general.architecture").value_or("");
  if (arch_name.empty()) throw Error(path + ": key 'general.architecture': missing");
  const Architecture& arch = find_architecture_for_gguf(arch_name);
  if (!arch.hf_config_from_spec) throw Error(path + ": a " + arch_name + " GGUF model cannot be written as a Hugging Face directory here");
  gguf_spec_ = gguf_decoder_spec(file_, arch, raw_);
  try {
    config_ = arch.hf_config_from_spec(gguf_spec_);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  arch.spec_from_hf(config_, &hf_spec_);
  check_same_model(gguf_spec_, hf_spec_, path);
  map_tensors(arch);
  write_text_files();
}

void GgufAsHf::map_tensors(const Architecture& arch) {
  const bool unpair = gguf_spec_.rope.pairing == RotaryPairing::kAdjacent && hf_spec_.rope.pairing == RotaryPairing::kHalves;
  if (unpair && gguf_spec_.rope.dim != gguf_spec_.head_dim) {
    throw Error(file_.name() + ": interleaved rotary pairs over part of a head cannot be reordered");
  }
  const bool shift_norms = gguf_spec_.norm_weight_offset != hf_spec_.norm_weight_offset;
  std::map<std::string, std::string> hf_by_gguf;
  for (Field f : kFields) {
    const std::string &g = arch.gguf_names.*f, &h = arch.hf_names.*f;
    if (g.empty() || h.empty()) continue;
    Mapped m;
    const bool q = f == &WeightNames::q || f == &WeightNames::q_bias, k = f == &WeightNames::k || f == &WeightNames::k_bias;
    if (unpair && (q || k)) m = {"", Change::kUnpairRotaryRows, q ? gguf_spec_.n_heads : gguf_spec_.n_kv_heads};
    if (shift_norms && is_norm(f)) m.change = Change::kShiftNorm;
    const int layers = g.find("{}") == std::string::npos ? 1 : gguf_spec_.n_layers;
    for (int l = 0; l < layers; ++l) {
      m.gguf_name = layer_name(g, l);
      hf_by_gguf[m.gguf_name] = layer_name(h, l);
      by_hf_name_[layer_name(h, l)] = m;
    }
  }
  for (const std::string& g : raw_.names()) {
    const auto it = hf_by_gguf.find(g);
    if (it == hf_by_gguf.end()) throw Error(file_.name() + ": tensor '" + g + "' has no Hugging Face name here");
    hf_order_.push_back(it->second);
  }
}

void GgufAsHf::write_text_files() {
  const Tokenizer tokenizer = Tokenizer::from_gguf(file_);
  const Vocab& v = tokenizer.vocab();
  nlohmann::json tokenizer_json;
  try {
    tokenizer_json = tokenizer_json_from_vocab(v);
  } catch (const Error& e) {
    throw Error(file_.name() + ": " + e.what());
  }
  const std::string chat_template = file_.get_string("tokenizer.chat_template").value_or("");
  text_files_["tokenizer.json"] = tokenizer_json.dump(2) + "\n";
  text_files_["tokenizer_config.json"] = tokenizer_config_from_vocab(v, chat_template).dump(2) + "\n";
  nlohmann::json generation = {{"bos_token_id", v.bos == kNoToken ? nlohmann::json(nullptr) : nlohmann::json(v.bos)},
                               {"eos_token_id", v.end_of_generation}};
  // The file's sampling recommendation travels with the copy.
  const SamplingDefaults sampling = sampling_defaults_from_gguf(file_).values;
  if (sampling.temperature) generation["temperature"] = *sampling.temperature;
  if (sampling.top_p) generation["top_p"] = *sampling.top_p;
  if (sampling.top_k) generation["top_k"] = *sampling.top_k;
  if (sampling.min_p) generation["min_p"] = *sampling.min_p;
  if (sampling.repetition_penalty) generation["repetition_penalty"] = *sampling.repetition_penalty;
  text_files_["generation_config.json"] = generation.dump(2) + "\n";
  if (v.bos != kNoToken) config_["bos_token_id"] = v.bos;
  if (v.eos != kNoToken) config_["eos_token_id"] = v.eos;
}

std::optional<SourceTensor> GgufAsHf::find(const std::string& name) const {
  const auto it = by_hf_name_.find(name);
  if (it == by_hf_name_.end()) return std::nullopt;
  const auto raw = raw_.find(it->second.gguf_name);
  if (!raw || it->second.change == Change::kNone) return raw;
  return changed(name, it->second, *raw);
}

SourceTensor GgufAsHf::changed(const std::string& name, const Mapped& m, const SourceTensor& raw) const {
  auto cached = changed_.find(name);
  if (cached == changed_.end()) {
    std::vector<float> v = tensor_as_f32(m.gguf_name, raw);
    if (m.change == Change::kShiftNorm) {
      const float shift = gguf_spec_.norm_weight_offset - hf_spec_.norm_weight_offset;
      for (float& x : v) x += shift;
    } else {
      const int64_t rows = raw.shape[0], width = raw.shape.size() == 2 ? raw.shape[1] : 1;
      if (raw.shape.size() > 2 || m.heads <= 0 || rows % (2 * int64_t(m.heads)) != 0) {
        throw Error(file_.name() + ": tensor '" + m.gguf_name + "' does not hold " + std::to_string(m.heads) + " heads of pairs");
      }
      v = unpair_rotary_rows(v, rows, width, m.heads);
    }
    cached = changed_.emplace(name, std::move(v)).first;
  }
  return SourceTensor{DType::kF32, cached->second.data(), raw.shape, cached->second.size() * sizeof(float)};
}

std::vector<std::string> GgufAsHf::names() const { return hf_order_; }

}  // namespace tessera
