#pragma once
// The generic decoder: one forward pass over a flattened batch of tokens from
// many sequences, reading and writing the paged KV cache. Every architecture
// runs through this code, and every op through the backend's kernel table;
// the spec switches the optional parts.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/workspace.h"
#include "models/decoder_spec.h"
#include "models/decoder_weights.h"
#include "models/kv_ring.h"
#include "models/moe_routing.h"

namespace tessera {

class OpProfile;

struct KvLayout {
  DType dtype = DType::kF16;  // kF16, kF32 or kI8 (per-head, per-token scales)
  int page_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
};

// One layer's pages in device memory: k and v are [n_pages][page_size][n_kv_heads][head_dim];
// an int8 cache adds their scales, [n_pages][page_size][n_kv_heads] f32.
struct KvLayer {
  void* k;
  void* v;
  float* k_scales = nullptr;
  float* v_scales = nullptr;
};

// A step's batch metadata, in device memory at fixed addresses.
struct ForwardBatch {
  int n_tokens = 0;
  const int32_t* token_ids = nullptr;   // (n_tokens)
  const int32_t* positions = nullptr;   // (n_tokens)
  const int64_t* slots = nullptr;       // (n_tokens): page * page_size + offset for the token's K and V
  ops::AttentionBatch attention{};
  int n_logit_rows = 0;
  const int32_t* logit_rows = nullptr;  // (n_logit_rows): tokens whose next-token logits are wanted
  int n_hidden_rows = 0;
  const int32_t* hidden_rows = nullptr;  // (n_hidden_rows): tokens whose final-normed hidden state is wanted (embeddings)
  const ContextShare* context = nullptr;  // a context-parallel group's split prefills, if any
};

// Largest batch a decoder is laid out for; a step beyond it is refused.
struct DecoderCapacity {
  int max_tokens = 2048;
  int max_seqs = 256;
};

// Sees intermediate activations (name, layer, [n_tokens][width] values, on
// the host) for comparison with reference implementations.
using ActivationObserver = std::function<void(const char* name, int layer, const float* values, int64_t n_tokens, int64_t width)>;

class Decoder {
 public:
  // Lays out the activation workspace and the attention plan on `backend`.
  // `spec` is the rank's spec (its heads and FFN width); a sharded `weights`
  // needs `comm`, the tensor-parallel group, which must outlive the decoder.
  // With whole weights, a `comm` of several ranks is a context-parallel
  // group: batches with a ContextShare pass their keys and values around it.
  Decoder(const DecoderSpec& spec, const DecoderWeights& weights, Backend& backend, const DecoderCapacity& capacity,
          Communicator* comm = nullptr);
  ~Decoder();

  void set_observer(ActivationObserver observer) { observer_ = std::move(observer); }
  // Times every step of each pass into `profile` (null: none). Draining the
  // stream around each step costs a GPU its overlap: for measurement only.
  void set_profile(OpProfile* profile) { profile_ = profile; }
  const DecoderCapacity& capacity() const { return capacity_; }
  // Whether a pass may be recorded and replayed: not while an observer or a
  // profile needs the host between its steps.
  // Not an MoE model's: its routing reads the router's scores on the host.
  bool recordable() const { return !observer_ && !profile_ && !comm_ && !ring_ && !experts_; }

  // Queues the pass on `stream`; writes (batch.n_logit_rows, vocab) logits
  // to device memory at `logits`, and (batch.n_hidden_rows, d_model) hidden
  // states after the output norm (what the head reads) at `hidden`.
  void forward(Backend& backend, Stream& stream, const ForwardBatch& batch, const KvLayout& layout,
               const std::vector<KvLayer>& kv, float* logits, float* hidden = nullptr);

 private:
  // The activations of one pass, regions of the workspace at fixed
  // addresses, each sized for capacity.max_tokens rows.
  struct Activations {
    float* x = nullptr;     // (tokens, d_model): the residual stream
    float* h = nullptr;     // (tokens, d_model): normed input of a block
    float* q = nullptr;     // (tokens, n_heads, head_dim)
    float* k = nullptr;     // (tokens, n_kv_heads, head_dim)
    float* v = nullptr;     // (tokens, n_kv_heads, head_dim)
    float* attn = nullptr;  // (tokens, n_heads, head_dim)
    float* proj = nullptr;  // (tokens, d_model): a block's output
    float* gate = nullptr;  // (tokens, ffn_dim)
    float* up = nullptr;    // (tokens, ffn_dim)
    float* rows = nullptr;  // (logit rows, d_model)
    // Exact tensor parallelism only:
    float* whole = nullptr;     // (tokens, attention or FFN width): a gathered projection input
    float* part = nullptr;      // (tokens, this rank's d_model rows): a projection's share
    float* gathered = nullptr;  // (world, tokens, widest share): all-gather staging
  };
  // What one forward pass runs with.
  struct Pass {
    Backend& backend;
    Stream& stream;
    const KernelTable& ops;
  };

  void attention_block(const Pass& pass, int layer, const ForwardBatch& batch, const KvLayout& layout, const KvLayer& kv);
  void ffn_block(const Pass& pass, int layer, int n_tokens);
  // The mixture-of-experts FFN (models/decoder_experts.cc): `proj` (n, d_model)
  // from the normed `h` (n, d_model).
  void experts_block(const Pass& pass, int layer, int n_tokens, const float* h, float* proj);
  // Experts `group` (n_group of them, chosen by the same tokens): their
  // outputs, weighted, added into those tokens' rows of proj.
  static constexpr int kMaxSharedExperts = 4;  // 8 outputs share one input at most (kernels)
  void expert_group(const Pass& pass, const LayerWeights& lw, const int* group, int n_group, const float* h, float* proj);
  // Adds the shared expert's output, scaled by its gate's sigmoid, into proj.
  void shared_expert(const Pass& pass, const LayerWeights& lw, int n_tokens, const float* h, float* proj);
  void output_head(const Pass& pass, const ForwardBatch& batch, float* logits);
  void final_hidden(const Pass& pass, const ForwardBatch& batch, float* hidden);
  // Where each output row of a gather of `split` comes from, for the token
  // count of the current pass: built once per pass, read by every layer.
  struct Gather {
    const ChannelSplit* split = nullptr;
    std::vector<int32_t> host;  // (output rows) i32, kept while the device copy may be in flight
    DeviceBuffer device;
  };
  void plan_gather(const Pass& pass, int64_t n, Gather& gather);
  // O or down from `in` (n, this rank's channels of `in_gather`) into `out`
  // (n, d_model), whole on every rank of a group.
  void project_out(const Pass& pass, const char* name, const PreparedLinear& weight, const float* in, int n,
                   const Gather& in_gather, float* out);
  // Every rank's `part` (n, its channels), into `out` (n, all channels)
  // through `gathered` (world, n, the largest share).
  void gather_columns(const Pass& pass, const float* part, int64_t n, const Gather& gather, float* gathered, float* out);
  ops::RopeParams rope_params(int layer) const;
  // The recipe of the global or the local (sliding-window) layers' rotation,
  // reading frequencies and factors from the given tables.
  ops::RopeParams rope_recipe(bool local, const float* inv_freq, const float* local_inv_freq, const float* freq_factors) const;
  void place_rope_tables(Backend& backend);
  template <class Run>
  void timed(const Pass& pass, const char* name, const Run& run, uint64_t weight_bytes = 0) const;
  void linear(const Pass& pass, const char* name, const LinearArgs& args) const;
  void observe(const Pass& pass, const char* name, int layer, const float* values, int64_t n_tokens, int64_t width) const;

  const DecoderSpec& spec_;
  const DecoderWeights& w_;
  DecoderCapacity capacity_;
  Workspace workspace_;
  Activations act_;
  std::unique_ptr<AttentionPlan> plan_;
  // The spec's rope tables resident on the device: (rotary_dim / 2) each, or null.
  std::vector<std::shared_ptr<const void>> rope_tables_;
  const float* inv_freq_ = nullptr;
  const float* local_inv_freq_ = nullptr;
  const float* freq_factors_ = nullptr;
  // Backends that read them only: the angles' cosines and sines of the global and the
  // local layers (ops::rope_table), (positions, rotary_dim / 2) twice each.
  const float* global_angles_ = nullptr;
  const float* local_angles_ = nullptr;
  int32_t angle_positions_ = 0;
  ActivationObserver observer_;
  OpProfile* profile_ = nullptr;
  Communicator* comm_ = nullptr;
  std::unique_ptr<KvRing> ring_;  // context parallelism
  DeviceBuffer rank_logits_;      // (rows, vocab / world): this rank's share
  DeviceBuffer gathered_logits_;  // (world, rows, vocab / world)
  Gather heads_gather_, ffn_gather_, model_gather_, vocab_gather_;
  // An MoE model's routing buffers, each sized for capacity.max_tokens.
  struct Experts {
    DeviceBuffer scores;        // (tokens, n_experts): the router's output
    std::vector<float> host_scores;
    ExpertRoutes routes;
    DeviceBuffer rows;          // (tokens * top_k) i32: routes.rows
    DeviceBuffer weights;       // (tokens * top_k): routes.weights
    DeviceBuffer input;         // (tokens, d_model): one expert's tokens' rows of h
    DeviceBuffer output;        // (tokens, d_model): that expert's output
    // A shared expert's gate: its score per token (on the device, then on the
    // host), the score's sigmoid, and the identity rows 0 … tokens - 1.
    DeviceBuffer shared_scores, shared_weights, shared_rows;  // (tokens)
    std::vector<float> host_shared;
  };
  std::unique_ptr<Experts> experts_;
};

}  // namespace tessera
