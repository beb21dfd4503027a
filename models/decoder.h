#pragma once
// The generic decoder: one forward pass over a flattened batch of tokens from
// many sequences, reading and writing the paged KV cache. Every architecture
// runs through this code; the spec switches its optional parts.
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cpu/flex_attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/thread_pool.h"
#include "models/decoder_spec.h"
#include "models/decoder_weights.h"

namespace tessera {

struct KvLayout {
  DType dtype = DType::kF16;  // kF16 or kF32
  int page_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
};

// One layer's pages: k and v are [n_pages][page_size][n_kv_heads][head_dim].
struct KvLayer {
  void* k;
  void* v;
};

struct ForwardBatch {
  int n_tokens = 0;
  const int32_t* token_ids = nullptr;   // [n_tokens]
  const int32_t* positions = nullptr;   // [n_tokens]
  const int64_t* slots = nullptr;       // [n_tokens]: page * page_size + offset for the token's K and V
  cpu::AttentionBatch attention{};
  int n_logit_rows = 0;
  const int32_t* logit_rows = nullptr;  // tokens whose next-token logits are wanted
};

// Sees intermediate activations (name, layer, [n_tokens][width] values) for
// comparison with reference implementations.
using ActivationObserver = std::function<void(const char* name, int layer, const float* values, int64_t n_tokens, int64_t width)>;

class Decoder {
 public:
  Decoder(const DecoderSpec& spec, const DecoderWeights& weights, const cpu::IsaFeatures& isa)
      : spec_(spec), w_(weights), isa_(isa) {}

  void set_observer(ActivationObserver observer) { observer_ = std::move(observer); }

  // Writes [batch.n_logit_rows][vocab] logits.
  void forward(const ForwardBatch& batch, const KvLayout& layout, const std::vector<KvLayer>& kv, float* logits,
               cpu::ThreadPool& pool);

 private:
  void attention_block(int layer, const ForwardBatch& batch, const KvLayout& layout, const KvLayer& kv, cpu::ThreadPool& pool);
  void ffn_block(int layer, int n_tokens, cpu::ThreadPool& pool);
  void ensure_workspace(int n_tokens);

  const DecoderSpec& spec_;
  const DecoderWeights& w_;
  cpu::IsaFeatures isa_;
  cpu::MatmulScratch scratch_;
  void observe(const char* name, int layer, const std::vector<float>& values, int64_t n_tokens, int64_t width) const {
    if (observer_) observer_(name, layer, values.data(), n_tokens, width);
  }

  std::vector<float> x_, h_, q_, k_, v_, attn_, proj_, gate_, up_, rows_;  // activations, reused
  ActivationObserver observer_;
};

}  // namespace tessera
