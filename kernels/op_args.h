#pragma once
// One argument struct per op of the backend table: pointers into the
// backend's own memory and the shapes that go with them, nothing else.
#include <cstdint>

#include "kernels/op_types.h"

namespace tessera {

class PreparedLinear;
class AttentionPlan;

// Expands `n_elems` elements of `src_dtype` at `src` into f32 at `dst`.
struct DequantizeArgs {
  const void* src;
  DType src_dtype;
  float* dst;
  int64_t n_elems;
};

// out[t] = table[ids[t] - first_id] expanded to f32; ids outside the
// table's rows give zero rows, so the ranks of a vocabulary-parallel table
// sum their lookups into the whole one. Ids were checked by the caller.
struct EmbeddingArgs {
  DType table_dtype;
  const void* table;      // (n_rows, dim): ids first_id … first_id + n_rows - 1
  int64_t first_id, n_rows;
  int64_t dim;
  const int32_t* ids;     // (n_tokens)
  int64_t n_tokens;
  float* out;             // (n_tokens, dim)
};

// out[r] = x[r] / rms(x[r]) * (weight + weight_offset); out may be x.
struct RmsNormArgs {
  const float* x;         // (n_rows, dim)
  const float* weight;    // (dim)
  float weight_offset;
  float eps;
  int64_t n_rows, dim;
  float* out;             // (n_rows, dim)
};

// Rotates x in place.
struct RopeArgs {
  float* x;                   // (n_tokens, n_heads, head_dim)
  const int32_t* positions;   // (n_tokens)
  int64_t n_tokens;
  int n_heads, head_dim;
  ops::RopeParams rope;
};

// y = x · Wᵀ (+ bias) for each weight of a group that reads the same input.
struct LinearOutput {
  const PreparedLinear* weight;
  float* y;  // (n_tokens, weight rows)
};
struct LinearArgs {
  const float* x;  // (n_tokens, cols)
  int64_t n_tokens;
  const LinearOutput* outputs;
  int n_outputs;
};

// Stores each token's key and value row in its cache slot. An int8 cache
// quantizes each head's row symmetrically with its own scale, keys centred
// and rotated first (see ops::PagedKv).
struct KvWriteArgs {
  void* k_pages;          // (n_pages, page_size, n_kv_heads, head_dim) in dtype
  void* v_pages;
  DType dtype;
  int64_t row;            // n_kv_heads * head_dim
  const int64_t* slots;   // (n_tokens): page * page_size + offset
  int64_t n_tokens;
  const float* k;         // (n_tokens, row)
  const float* v;
  int head_dim = 0;             // kI8: the span each scale covers
  float* k_scales = nullptr;    // kI8: (n_pages, page_size, n_kv_heads)
  float* v_scales = nullptr;
  const float* k_center = nullptr;  // kI8, optional: (row); see ops::PagedKv
};

// Fills `plan` with the step's work items; runs once per step.
struct AttentionPlanArgs {
  ops::AttentionBatch batch;
  int n_tokens;
  int n_kv_heads;
  AttentionPlan* plan;
};

struct AttentionArgs {
  const AttentionPlan* plan;
  const float* q;         // (n_tokens, n_heads, head_dim)
  int n_heads;
  ops::PagedKv kv;
  ops::AttentionParams params;
  float* out;             // (n_tokens, n_heads, head_dim)
};

// out[i] = act(gate[i]) * up[i]; out may be gate.
struct GatedActivationArgs {
  ops::GatedActivation act;
  const float* gate;      // (n)
  const float* up;        // (n)
  int64_t n;
  float* out;             // (n)
};

// x[i] += y[i] (residual connections).
struct AddArgs {
  float* x;
  const float* y;
  int64_t n;
};

// x[i] *= factor (embedding scale).
struct ScaleArgs {
  float* x;
  int64_t n;
  float factor;
};

// x[i] = cap * tanh(x[i] / cap) (final logit softcap).
struct SoftcapArgs {
  float* x;
  int64_t n;
  float cap;
};

// out[r] = x[rows[r]]: the rows whose next-token logits are wanted.
struct GatherRowsArgs {
  const float* x;         // (n_tokens, width)
  int64_t width;
  const int32_t* rows;    // (n_rows)
  int64_t n_rows;
  float* out;             // (n_rows, width)
};

// x[rows[r]] += scales[r] * y[r]: an expert's outputs, weighted, into its
// tokens' rows. The rows of one call are distinct.
struct ScatterAddRowsArgs {
  float* x;               // (n_tokens, width)
  int64_t width;
  const int32_t* rows;    // (n_rows)
  const float* scales;    // (n_rows)
  int64_t n_rows;
  const float* y;         // (n_rows, width)
};

}  // namespace tessera
