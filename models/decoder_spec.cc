#include "models/decoder_spec.h"

#include "engine/core/error.h"

namespace tessera {

ops::GatedActivation gated_activation_op(FfnActivation a) {
  switch (a) {
    case FfnActivation::kSwiGlu: return ops::GatedActivation::kSilu;
    case FfnActivation::kGeGluTanh: return ops::GatedActivation::kGeluTanh;
    case FfnActivation::kGeGluTanhTable: return ops::GatedActivation::kGeluTanhTable;
    case FfnActivation::kSwiGluClampedOai: return ops::GatedActivation::kSiluClampedOai;
  }
  return ops::GatedActivation::kSilu;
}

void DecoderSpec::validate(const std::string& source) const {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(source + ": " + architecture + ": " + what);
  };
  require(n_layers > 0 && n_layers <= 1024, "layer count " + std::to_string(n_layers) + " out of range");
  require(d_model > 0 && n_heads > 0 && n_kv_heads > 0 && head_dim > 0 && ffn_dim > 0, "a model dimension is missing");
  require(n_heads % n_kv_heads == 0, "heads (" + std::to_string(n_heads) + ") not a multiple of KV heads (" +
                                         std::to_string(n_kv_heads) + ")");
  require(vocab_size > 0, "vocabulary size missing");
  require(rope.dim > 0 && rope.dim <= head_dim && rope.dim % 2 == 0, "rotary dimension " + std::to_string(rope.dim) + " invalid");
  require(rope.freq_factors.empty() || int(rope.freq_factors.size()) == rope.dim / 2, "rope frequency factors: one per rotary pair");
  if (rope.recipe == RopeRecipe::kTransformers) {
    require(int(rope.inv_freq.size()) == rope.dim / 2, "rope frequency table: one per rotary pair");
    require(rope.local_base <= 0.0f || int(rope.local_inv_freq.size()) == rope.dim / 2,
            "local rope frequency table: one per rotary pair");
  }
  require(norm_eps > 0.0f, "norm epsilon must be positive");
  require(int(sliding_window.size()) == n_layers, "per-layer sliding window list has the wrong length");
  for (int w : sliding_window) require(w >= 0, "negative sliding window");
  require(moe.n_experts >= 0 && moe.n_experts <= 4096, "expert count " + std::to_string(moe.n_experts) + " out of range");
  if (moe.n_experts > 0) {
    require(moe.top_k > 0 && moe.top_k <= moe.n_experts, "experts used per token (" + std::to_string(moe.top_k) +
                                                              ") must be between 1 and the expert count (" +
                                                              std::to_string(moe.n_experts) + ")");
  }
  require(moe.shared_ffn_dim >= 0 && (moe.shared_ffn_dim == 0 || moe.n_experts > 0),
          "a shared expert width (" + std::to_string(moe.shared_ffn_dim) + ") needs a mixture of experts");
}

}  // namespace tessera
