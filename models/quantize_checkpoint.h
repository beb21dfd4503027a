#pragma once
// Writes a quantized copy of a Hugging Face model directory, or of a GGUF
// file read as one (models/gguf_as_hf.h): every linear weight of the decoder
// (and the output head, untied from the embedding) in a scheme of
// quant/schemes.h, everything else as it was (GGUF blocks as f32). The
// copy's config.json records the scheme, so it loads without quantizing again.
//
// Tensors of a linear NAME (Binder reads them back, models/decoder_weights.cc):
//   NAME             I8 (rows, cols), or U8 (rows, cols / 2) of signed nibbles, low first
//   NAME_scale       F32 (rows, groups)
//   NAME_zero_point  I8 (rows, groups), asymmetric 4 bits only
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/op_types.h"
#include "quant/activation_aware.h"
#include "quant/schemes.h"

namespace tessera {

struct QuantizedTensorReport {
  std::string name;
  int bits = 0;
  int64_t group_size = 0;
  double relative_error = 0;  // ||W - dequant(Q)|| / ||W||, Frobenius
};

// Calibration activations for activation-aware scaling, keyed by the decoder's
// observation point and layer: "attn_norm/L" (q, k, v), "attention/L" (o),
// "ffn_norm/L" (gate, up), "ffn_act/L" (down).
struct QuantizeCalibration {
  std::map<std::string, quant::ChannelStats> inputs;
  quant::MatmulFn matmul;
  // out[i] = act(gate[i]) · up[i] for i < n, as the model's kernels evaluate it.
  std::function<void(ops::GatedActivation act, const float* gate, const float* up, int64_t n, float* out)> gated;
};

// One group's activation-aware choice, for the report.
struct ScaledInputReport {
  std::string input;  // "attn_norm/3" …
  float alpha = 0;
  double error = 0, plain_error = 0;
};

struct QuantizeCheckpointJob {
  std::string model_dir;
  std::string out_dir;
  quant::SchemeChoice scheme;
  // Called after each tensor: done, total, the tensor's name.
  std::function<void(size_t, size_t, const std::string&)> progress;
  // Set: activation-aware scaling (AWQ; SmoothQuant-style for int8
  // activations) folded into the norms and the up (and, without grouped
  // queries, v) projections that feed the scaled inputs.
  const QuantizeCalibration* calibration = nullptr;
  std::vector<ScaledInputReport>* scaled_inputs = nullptr;  // filled when set
};

// Throws tessera::Error naming the file or tensor at fault; nothing is left
// under out_dir's final file names when it fails.
std::vector<QuantizedTensorReport> quantize_checkpoint(const QuantizeCheckpointJob& job);

}  // namespace tessera
