#include "kernels/xpu/xpu_ops.h"

#include <cmath>

#include "engine/core/error.h"
#include "kernels/q8_rows.h"
#include "kernels/query_groups.h"

namespace tessera::xpu {
namespace {

constexpr int64_t kChunk = 32;
constexpr int64_t kTokensPerItem = 8;  // linear.cl's TOKENS_PER_ITEM
// Up to this many tokens, a device whose program has the sub-group kernels
// (OpenclDevice::sub_group_kernels) runs a row's lanes as work-items
// (linear_lanes.cl); beyond it, each row is decoded once for eight tokens.
constexpr int64_t kLaneKernelTokens = 4;
constexpr size_t kLaneKernelRows = 8, kLanes = 8;  // linear_lanes.cl's work-group: rows × lanes
constexpr size_t kNormThreads = 64, kAttentionThreads = 256, kAttentionMaxDim = 256, kAttentionLanes = 16;

void quantize_q8(const LaunchContext& cx, const QueueState& q, DType type, const float* x, int64_t n_tokens, int64_t cols,
                 const Q8Rows& out) {
  const int64_t n = n_tokens * cols;
  if (type == DType::kQ8_K) {
    if (cols % 256 != 0) throw Error("quantize: Q8_K rows need multiples of 256 elements");
    launch(cx, q.queue, "quantize_q8_k", linear_range(n / 256), x, int64_t(n / 256), out.qs, out.d, out.s);
  } else {
    const int with_sums = type == DType::kQ8_1;
    launch(cx, q.queue, "quantize_q8_0", linear_range(n / kChunk), x, int64_t(n / kChunk), with_sums, out.qs, out.d, out.s);
  }
}

int code(DType dtype) { return int(dtype); }

}  // namespace

Q8Scratch::~Q8Scratch() {
  for (void* p : retired_) memory_.release(p);
  memory_.release(data_);
}

void* Q8Scratch::reserve(size_t bytes) {
  if (bytes <= size_) return data_;
  void* grown = memory_.allocate(bytes);
  if (data_) retired_.push_back(data_);
  data_ = grown;
  size_ = bytes;
  return data_;
}

bool decodable(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ4_0 || t == DType::kQ4_1 ||
         t == DType::kQ5_0 || t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K;
}

std::string linear_refusal(const QuantizedLinear& weight) {
  const WeightScheme& s = weight.scheme;
  if (!decodable(s.storage) || s.has_zero_points || s.activation != ActivationPolicy::kNone) {
    return "the XPU backend has no linear kernel for " + s.describe();
  }
  if (weight.scales || weight.zero_points || weight.input_order) return "the XPU backend reads no separate scales or input order";
  if (weight.cols % kChunk != 0) return "the XPU backend needs input features in multiples of 32, not " + std::to_string(weight.cols);
  return {};
}

void run_dequantize(const LaunchContext& cx, const DequantizeArgs& a, const QueueState& q) {
  if (!decodable(a.src_dtype)) throw Error("dequantize: no XPU kernel for " + std::string(dtype_name(a.src_dtype)));
  const DTypeInfo& info = dtype_info(a.src_dtype);
  if (a.n_elems < 0 || a.n_elems % info.block_elems != 0 || a.n_elems % kChunk != 0) {
    throw Error("dequantize: " + std::to_string(a.n_elems) + " elements is not a whole number of blocks");
  }
  if (a.n_elems == 0) return;
  const int64_t chunks = a.n_elems / kChunk;
  launch(cx, q.queue, "dequantize", linear_range(chunks), code(a.src_dtype), a.src, a.dst, chunks);
}

void run_embedding(const LaunchContext& cx, const EmbeddingArgs& a, const QueueState& q) {
  if (a.n_tokens <= 0) return;
  if (!decodable(a.table_dtype)) throw Error("embedding: no XPU kernel for " + std::string(dtype_name(a.table_dtype)));
  if (a.dim % kChunk != 0) throw Error("embedding: the XPU backend needs rows in multiples of 32 elements");
  const int64_t row_bytes = int64_t(*dtype_bytes(a.table_dtype, uint64_t(a.dim)));
  launch(cx, q.queue, "embedding", linear_range(a.n_tokens * (a.dim / kChunk)), code(a.table_dtype), a.table, row_bytes, a.first_id,
         a.n_rows, a.dim, a.ids, a.n_tokens, a.out);
}

void run_rms_norm(const LaunchContext& cx, const RmsNormArgs& a, const QueueState& q) {
  if (a.n_rows <= 0) return;
  launch(cx, q.queue, "rms_norm", groups_range(a.n_rows, 1, kNormThreads), a.x, a.weight, a.weight_offset, a.eps, a.dim, a.out);
}

void run_rope(const LaunchContext& cx, const RopeArgs& a, const QueueState& q) {
  const ops::RopeParams& p = a.rope;
  const int64_t n = a.n_tokens * a.n_heads * (p.rotary_dim / 2);
  if (n <= 0) return;
  // As the CPU computes it (kernels/cpu/elementwise/rope.cc): the float power.
  const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.rotary_dim));
  launch(cx, q.queue, "rope", linear_range(n), a.x, a.positions, a.n_tokens, a.n_heads, a.head_dim, p.rotary_dim,
         int(p.style == ops::RopeStyle::kInterleaved), int(p.numerics == ops::RopeNumerics::kGgml), theta_scale, p.freq_scale,
         int(p.freq_factors != nullptr), p.freq_factors, p.inv_freq, p.cos_table ? p.table_positions : 0, p.cos_table);
}

void run_linear(const LaunchContext& cx, const LinearArgs& a, const QueueState& q) {
  if (a.n_tokens <= 0 || a.n_outputs <= 0) return;
  const int64_t cols = a.outputs[0].weight->cols();
  const int64_t token_groups = (a.n_tokens + kTokensPerItem - 1) / kTokensPerItem;
  Q8Rows quantized{};
  DType quantized_as = DType::kF32;  // what `quantized` holds so far
  for (int i = 0; i < a.n_outputs; ++i) {
    const auto& w = static_cast<const XpuLinear&>(*a.outputs[i].weight);
    const DType storage = w.desc().scheme.storage;
    if (!decodable(storage)) throw Error("linear: no XPU kernel for " + w.desc().name);
    const DType activation = q8_activation_type(storage);
    const int64_t stride = int64_t(w.desc().row_stride);
    const int has_bias = w.bias() != nullptr;
    const Range range = grid_range(w.rows(), token_groups);
    if (activation == DType::kF32) {
      launch(cx, q.queue, "linear_float", range, code(storage), w.data(), stride, w.rows(), w.cols(), a.x, a.n_tokens, has_bias,
             w.bias(), a.outputs[i].y);
      continue;
    }
    if (activation != quantized_as) {
      // The outputs of one call read the same input: quantized once per format.
      quantized = q8_rows_at(q.scratch->reserve(q8_rows_bytes(a.n_tokens, cols)), a.n_tokens, cols);
      quantize_q8(cx, q, activation, a.x, a.n_tokens, cols, quantized);
      quantized_as = activation;
    }
    const bool lanes = a.n_tokens <= kLaneKernelTokens && cx.program->has_kernel("linear_q8_lanes");
    const Range lane_range = groups_range((w.rows() + kLaneKernelRows - 1) / kLaneKernelRows, a.n_tokens, kLaneKernelRows * kLanes);
    launch(cx, q.queue, lanes ? "linear_q8_lanes" : "linear_q8", lanes ? lane_range : range, code(storage), w.data(), stride,
           w.rows(), w.cols(), quantized.qs, quantized.d, quantized.s, a.n_tokens, has_bias, w.bias(), a.outputs[i].y);
  }
}

void run_kv_write(const LaunchContext& cx, const KvWriteArgs& a, const QueueState& q) {
  const int64_t n = a.n_tokens * a.row;
  if (n <= 0) return;
  if (a.dtype != DType::kF16 && a.dtype != DType::kF32) {
    throw Error("kv_write: the XPU backend has no " + std::string(dtype_name(a.dtype)) + " cache");
  }
  launch(cx, q.queue, "kv_write", linear_range(n), a.k_pages, a.v_pages, int(a.dtype == DType::kF16), a.row, a.slots, a.n_tokens,
         a.k, a.v);
}

void run_plan_attention(const AttentionPlanArgs& a) {
  auto& plan = static_cast<XpuAttentionPlan&>(*a.plan);
  if (a.n_tokens > plan.max_tokens || a.batch.n_seqs > plan.max_seqs) throw Error("attention plan: batch exceeds its capacity");
  plan.batch = a.batch;
  plan.n_tokens = a.n_tokens;
}

void run_attention(const LaunchContext& cx, const AttentionArgs& a, const QueueState& q) {
  const auto& plan = static_cast<const XpuAttentionPlan&>(*a.plan);
  if (plan.n_tokens <= 0) return;
  const ops::PagedKv& kv = a.kv;
  if (kv.dtype != DType::kF16 && kv.dtype != DType::kF32) {
    throw Error("attention: the XPU backend has no " + std::string(dtype_name(kv.dtype)) + " KV cache");
  }
  if (kv.head_dim <= 0 || kv.head_dim % int(kAttentionLanes) != 0 || kv.head_dim > int(kAttentionMaxDim)) {
    throw Error("attention: the XPU backend has no kernel for head size " + std::to_string(kv.head_dim));
  }
  const ops::AttentionParams& p = a.params;
  std::string why;
  const ops::QueryGroups groups = ops::query_groups(a.n_heads, kv.n_kv_heads, p, &why);
  if (!why.empty()) throw Error("attention: " + why);
  const ops::AttentionBatch& b = plan.batch;
  const float query_scale = p.scale_queries ? p.scale : 1.0f, score_scale = p.scale_queries ? 1.0f : p.scale;
  launch(cx, q.queue, "attention", groups_range(plan.n_tokens, a.n_heads, kAttentionThreads), b.n_seqs, b.query_start,
         b.positions, b.kv_len, b.page_indptr, b.page_indices, int(b.prefix_len != nullptr), b.prefix_len, a.q, a.n_heads, kv.k,
         kv.v, int(kv.dtype == DType::kF16), kv.page_size, kv.n_kv_heads, kv.head_dim, int(p.mask), p.window, int(p.score),
         p.softcap, p.alibi_slopes, query_scale, score_scale, groups.group, groups.offset, int(p.sinks != nullptr), p.sinks,
         a.out);
}

void run_gated_activation(const LaunchContext& cx, const GatedActivationArgs& a, const QueueState& q) {
  if (a.n <= 0) return;
  launch(cx, q.queue, "gated_activation", linear_range(a.n), int(a.act), a.gate, a.up, a.n, a.out);
}

void run_add(const LaunchContext& cx, const AddArgs& a, const QueueState& q) {
  if (a.n > 0) launch(cx, q.queue, "add", linear_range(a.n), a.x, a.y, a.n);
}

void run_scale(const LaunchContext& cx, const ScaleArgs& a, const QueueState& q) {
  if (a.n > 0) launch(cx, q.queue, "scale", linear_range(a.n), a.x, a.n, a.factor);
}

void run_softcap(const LaunchContext& cx, const SoftcapArgs& a, const QueueState& q) {
  if (a.n > 0) launch(cx, q.queue, "softcap", linear_range(a.n), a.x, a.n, a.cap);
}

void run_gather_rows(const LaunchContext& cx, const GatherRowsArgs& a, const QueueState& q) {
  const int64_t n = a.n_rows * a.width;
  if (n > 0) launch(cx, q.queue, "gather_rows", linear_range(n), a.x, a.width, a.rows, a.n_rows, a.out);
}

void run_scatter_add_rows(const LaunchContext& cx, const ScatterAddRowsArgs& a, const QueueState& q) {
  const int64_t n = a.n_rows * a.width;
  if (n > 0) launch(cx, q.queue, "scatter_add_rows", linear_range(n), a.x, a.width, a.rows, a.scales, a.n_rows, a.y);
}

}  // namespace tessera::xpu
