#pragma once
// The named schemes users pick (`tessera quantize --scheme`, the serve
// config's `quantization: {scheme: ...}`) and how a quantized checkpoint
// records them in config.json's `quantization_config`.
//
//   a16w8  int8 weights, one scale per output channel; 16-bit activations
//   a16w4  int4 weights per group (default 128) with zero points; 16-bit activations
//   da8w8  int8 weights per output channel; activations quantized to int8
//          per token at run time
//
// The output head (lm_head) of an a16w4 model is kept at 8 bits per channel:
// it is the layer most sensitive to 4-bit error, as llama.cpp's mixes also
// keep it wider. Likewise da8w8 keeps the value projection's activations
// at 16 bits (its weights are int8 per channel like the rest): v carries
// the attention norm's outlier channels straight into the residual stream.
// On Qwen2.5-Coder-0.5B, int8 activations there alone cost +1.7%
// perplexity; v is 1/7 of the layer's attention weights or less.
//
// a16w4's last decoder layer takes groups of 32 inputs, still 4 bits: its
// outputs reach the head with no later layer to dilute their error, and its
// down projection is the model's most sensitive matrix at 4 bits. On
// SmolLM2-135M (30 layers) that layer alone in floating point takes a16w4
// g128 from 23.17 to 22.02 perplexity, more than any other layer (0.1 to
// 0.5); at groups of 32 it gives 22.49. It is 1/30 of the weights, so the
// model grows by 0.01 bits a weight.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "quant/int_weights.h"

namespace tessera::quant {

// How a checkpoint packs its quantized linears: this project's layout
// (quant/int_weights.h), AutoAWQ's GEMM format or AutoGPTQ's.
enum class CheckpointFormat : uint8_t { kTessera, kAwq, kGptq };

struct SchemeChoice {
  std::string name;            // a16w8, a16w4, da8w8; awq, gptq for published checkpoints
  IntQuantConfig layers;       // every linear of the decoder layers
  IntQuantConfig output_head;  // lm_head
  IntQuantConfig value;        // v_proj, where it is a matrix of its own (differs from layers in activations only)
  IntQuantConfig final_layer;  // every linear of the last decoder layer (v there takes value's activations)
  std::string method = "rtn";  // rtn or awq
  CheckpointFormat format = CheckpointFormat::kTessera;
  bool gptq_zero_offset = true;  // GPTQ checkpoint_format "gptq" stores each zero point minus one ("gptq_v2" does not)

  // The weights of decoder layer `layer` of `n_layers`: final_layer for the last one.
  const IntQuantConfig& layer_weights(int layer, int n_layers) const { return layer == n_layers - 1 ? final_layer : layers; }
};

// Throws tessera::Error listing the schemes for an unknown name, or when the
// group size does not suit the scheme (0: the scheme's default).
SchemeChoice scheme_choice(std::string_view name, int64_t group_size = 0);

// config.json's quantization_config for a checkpoint written with `choice`.
nlohmann::json quantization_config_json(const SchemeChoice& choice);

// The scheme of a quantized checkpoint, from its quantization_config:
// written by `tessera quantize`, by AutoAWQ (quant_method awq, version gemm)
// or by AutoGPTQ (quant_method gptq, 4 bits). nullopt when the config has
// none. Throws tessera::Error naming `where` for a malformed or unsupported one.
std::optional<SchemeChoice> read_quantization_config(const nlohmann::json& config, const std::string& where);

}  // namespace tessera::quant
