// The CPU backend's kernel table: each entry unpacks its argument struct and
// runs the kernels of this folder on the stream's thread pool.
#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "kernels/cpu/elementwise/activation.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "kernels/cpu/runtime/cpu_prepared.h"
#include "quant/dequantize.h"
#include "kernels/cpu/elementwise/embedding.h"
#include "kernels/cpu/attention/flex_attention.h"
#include "kernels/cpu/attention/kv_pages.h"
#include "kernels/cpu/elementwise/norm.h"
#include "kernels/cpu/elementwise/rope.h"

namespace tessera::cpu {
namespace {

CpuStream& cpu_stream(Stream& stream) { return static_cast<CpuStream&>(stream); }

void dequantize_op(const DequantizeArgs& a, Stream&) { dequantize_row(a.src_dtype, a.src, a.dst, a.n_elems); }

void embedding_op(const EmbeddingArgs& a, Stream& s) {
  embedding_lookup(a, cpu_stream(s).pool());
}

void rms_norm_op(const RmsNormArgs& a, Stream& s) {
  rms_norm(a.x, a.weight, a.weight_offset, a.eps, a.n_rows, a.dim, a.out, cpu_stream(s).pool());
}

void rope_op(const RopeArgs& a, Stream& s) {
  CpuStream& cs = cpu_stream(s);
  apply_rope(a.x, a.positions, a.n_tokens, a.n_heads, a.head_dim, a.rope, cs.pool(), cs.isa());
}

void add_bias(float* y, const float* bias, int64_t n_rows, int64_t dim) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] += bias[i];
  }
}

// GGUF and float weights share one activation conversion, integer schemes
// another; each product is the one its weight gives alone.
void linear_op(const LinearArgs& a, Stream& s) {
  CpuStream& cs = cpu_stream(s);
  if (size_t(a.n_outputs) > kMaxSharedOutputs) throw Error("linear: too many outputs share one input");
  std::array<MatmulOutput, kMaxSharedOutputs> outputs;
  std::array<const IntLinear*, kMaxSharedOutputs> int_weights;
  std::array<float*, kMaxSharedOutputs> int_outputs;
  size_t n_block = 0, n_int = 0;
  for (int i = 0; i < a.n_outputs; ++i) {
    const auto* w = static_cast<const CpuLinear*>(a.outputs[i].weight);
    if (w->int_weight()) {
      int_weights[n_int] = w->int_weight();
      int_outputs[n_int++] = a.outputs[i].y;
    } else {
      outputs[n_block++] = {w->weight(), a.outputs[i].y};
    }
  }
  if (n_block) matmul_shared_input({outputs.data(), n_block}, a.x, a.n_tokens, cs.matmul_scratch(), cs.pool());
  if (n_int) {
    quantize_int_activations({int_weights.data(), n_int}, a.x, a.n_tokens, cs.int_activations(), &cs.pool());
    for (size_t i = 0; i < n_int; ++i) int_matmul(*int_weights[i], cs.int_activations(), a.n_tokens, int_outputs[i], cs.pool());
  }
  for (int i = 0; i < a.n_outputs; ++i) {
    const auto* w = static_cast<const CpuLinear*>(a.outputs[i].weight);
    if (w->bias()) add_bias(a.outputs[i].y, w->bias(), a.n_tokens, w->rows());
  }
}

void kv_write_op(const KvWriteArgs& a, Stream&) { write_kv_rows(a); }

void plan_attention_op(const AttentionPlanArgs& a, Stream&) {
  auto* plan = static_cast<CpuAttentionPlan*>(a.plan);
  const size_t needed = size_t(a.n_tokens / kQueryTile + a.batch.n_seqs) * size_t(a.n_kv_heads);
  if (needed > plan->items.capacity()) throw Error("attention plan: batch larger than the plan was sized for");
  plan->batch = a.batch;
  plan_attention_items(a.batch, a.n_kv_heads, plan->items);
}

void attention_op(const AttentionArgs& a, Stream& s) {
  CpuStream& cs = cpu_stream(s);
  const auto* plan = static_cast<const CpuAttentionPlan*>(a.plan);
  run_attention_items(plan->items, a.q, a.n_heads, a.kv, plan->batch, a.params, a.out, cs.pool(), cs.isa(), plan->workspace);
}

void gated_activation_op(const GatedActivationArgs& a, Stream& s) {
  CpuStream& cs = cpu_stream(s);
  gated_activation(a.act, a.gate, a.up, a.n, a.out, cs.pool(), cs.isa());
}

void add_op(const AddArgs& a, Stream&) {
  for (int64_t i = 0; i < a.n; ++i) a.x[i] += a.y[i];
}

void scale_op(const ScaleArgs& a, Stream&) {
  for (int64_t i = 0; i < a.n; ++i) a.x[i] *= a.factor;
}

void softcap_op(const SoftcapArgs& a, Stream&) {
  for (int64_t i = 0; i < a.n; ++i) a.x[i] = a.cap * std::tanh(a.x[i] / a.cap);
}

void gather_rows_op(const GatherRowsArgs& a, Stream&) {
  for (int64_t r = 0; r < a.n_rows; ++r) {
    std::memcpy(a.out + r * a.width, a.x + int64_t(a.rows[r]) * a.width, size_t(a.width) * sizeof(float));
  }
}

void scatter_add_rows_op(const ScatterAddRowsArgs& a, Stream&) {
  for (int64_t r = 0; r < a.n_rows; ++r) {
    float* x = a.x + int64_t(a.rows[r]) * a.width;
    const float* y = a.y + r * a.width;
    const float s = a.scales[r];
    for (int64_t c = 0; c < a.width; ++c) x[c] += s * y[c];
  }
}

KernelTable make_table() {
  KernelTable t;
  t.dequantize = dequantize_op;
  t.embedding = embedding_op;
  t.rms_norm = rms_norm_op;
  t.rope = rope_op;
  t.linear = linear_op;
  t.kv_write = kv_write_op;
  t.plan_attention = plan_attention_op;
  t.attention = attention_op;
  t.gated_activation = gated_activation_op;
  t.add = add_op;
  t.scale = scale_op;
  t.softcap = softcap_op;
  t.gather_rows = gather_rows_op;
  t.scatter_add_rows = scatter_add_rows_op;
  return t;
}

}  // namespace

const KernelTable& cpu_kernel_table() {
  static const KernelTable table = make_table();  // immutable after construction
  return table;
}

}  // namespace tessera::cpu
