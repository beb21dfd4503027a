// Paged FlexAttention: one kernel over the page table serving decode and
// chunked prefill, with the CPU backend's arithmetic (kernels/cpu/
// flex_attention_impl.h) step for step: each score a 16-lane dot product,
// then the maximum, the sum of exponentials over 16-key groups aligned to
// key 0 (in double, group after group), the probabilities (rounded to f16
// for an f16 cache), and per dimension the 16 lane sums of probability times
// value, keys in order, reduced as the CPU reduces them. Each pass
// recomputes the scores instead of storing them, so any context length fits.

#define ATT_THREADS 256  // keys per tile
#define ATT_MAX_DIM 256
#define ATT_LANES 16     // the CPU's accumulator width

#ifdef XPU_INTEL_SUBGROUPS
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
// Sub-groups of 16: sub-group i of the work-group is work-items 16i .. 16i + 15,
// so each 16-key group of a tile is one sub-group and its reductions are
// shuffles instead of rounds through local memory between barriers.
#define ATT_SUB_GROUPS __attribute__((intel_reqd_sub_group_size(ATT_LANES)))
#define KEY_GROUP_STRIDE 1  // group g's sum lands in red[g]

float lanes_max(float v) {
  for (int mask = ATT_LANES / 2; mask > 0; mask /= 2) v = fmax(v, intel_sub_group_shuffle_xor(v, mask));
  return v;
}

// Lane 0 ends with ((r0 + r8) + (r4 + r12)) + ((r2 + r10) + (r6 + r14)) + …,
// the order of the local-memory tree below.
float lanes_sum(float v) {
  for (int mask = ATT_LANES / 2; mask > 0; mask /= 2) v = v + intel_sub_group_shuffle_xor(v, mask);
  return v;
}
#else
#define ATT_SUB_GROUPS
#define KEY_GROUP_STRIDE ATT_LANES  // group g's sum lands in red[g * 16]
#endif

// The maximum of every work-item's `v` (exact in any order).
float work_group_max(float v, __local float* red, int tid) {
#ifdef XPU_INTEL_SUBGROUPS
  v = lanes_max(v);
  if (tid % ATT_LANES == 0) red[tid / ATT_LANES] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  float m = red[0];
  for (int g = 1; g < ATT_THREADS / ATT_LANES; ++g) m = fmax(m, red[g]);
#else
  red[tid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int offset = ATT_THREADS / 2; offset > 0; offset /= 2) {
    if (tid < offset) red[tid] = fmax(red[tid], red[tid + offset]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float m = red[0];
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  return m;
}

// The sum of `v` over each group of 16 work-items, as the CPU sums its 16
// lanes, left in red[g * KEY_GROUP_STRIDE] for group g and visible to the
// whole work-group on return.
void key_group_sums(float v, __local float* red, int tid) {
#ifdef XPU_INTEL_SUBGROUPS
  v = lanes_sum(v);
  if (tid % ATT_LANES == 0) red[tid / ATT_LANES] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
#else
  red[tid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int offset = ATT_LANES / 2; offset > 0; offset /= 2) {
    if (tid % ATT_LANES < offset) red[tid] = red[tid] + red[tid + offset];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif
}

// The sequence of token t: the last s with query_start[s] <= t.
int sequence_of(__global const int* query_start, int n_seqs, int t) {
  int lo = 0, hi = n_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (query_start[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

float load_kv(__global const uchar* pages, long index, int f16) {
  return f16 ? half_bits_to_float(((__global const ushort*)pages)[index]) : ((__global const float*)pages)[index];
}

typedef struct {
  int mask, score, window;
  float softcap;
  int pos, kv_head, head, page_size, n_kv_heads, head_dim, f16;
  float score_scale;
} AttentionShape;

long kv_row_of(__global const int* pages, const AttentionShape* a, int k) {
  const long slot = (long)pages[k / a->page_size] * a->page_size + k % a->page_size;
  return (slot * a->n_kv_heads + a->kv_head) * a->head_dim;
}

float attention_score(__local const float* q_s, __global const uchar* keys, __global const int* pages,
                      __global const float* slopes, const AttentionShape* a, int k) {
  const long row = kv_row_of(pages, a, k);
  float acc[ATT_LANES];
  for (int l = 0; l < ATT_LANES; ++l) acc[l] = 0.0f;
  for (int i = 0; i < a->head_dim; i += ATT_LANES) {
    for (int l = 0; l < ATT_LANES; ++l) acc[l] = fma(q_s[i + l], load_kv(keys, row + i + l, a->f16), acc[l]);
  }
  const float s = (reduce_16_lanes(acc) + 0.0f) * a->score_scale;
  if (a->score == SCORE_SOFTCAP) return a->softcap * tanh_rounded(s / a->softcap);
  if (a->score == SCORE_ALIBI) return s + slopes[a->head] * (float)(k - a->pos);
  return s;
}

// One work-group per (query token, query head).
__kernel __attribute__((reqd_work_group_size(ATT_THREADS, 1, 1))) ATT_SUB_GROUPS
void attention(int n_seqs, __global const int* query_start, __global const int* positions, __global const int* kv_len,
               __global const int* page_indptr, __global const int* page_indices, int has_prefix,
               __global const int* prefix_len, __global const float* q, int n_heads, __global const uchar* keys,
               __global const uchar* values, int f16, int page_size, int n_kv_heads, int head_dim, int mask, int window,
               int score, float softcap, __global const float* slopes, float query_scale, float score_scale,
               int query_group, int query_head_offset, int has_sinks, __global const float* sinks,
               __global float* out) {
  __local float q_s[ATT_MAX_DIM], p_s[ATT_THREADS], red[ATT_THREADS];
  __local float inverse_s;
  __local long value_rows[ATT_THREADS];  // pass 3: where each key of the tile keeps its values
  const int t = get_group_id(0), head = get_group_id(1), tid = get_local_id(0);
  const int D = head_dim;
  AttentionShape a = {mask, score, window, softcap, 0, (head + query_head_offset) / query_group, head, page_size, n_kv_heads,
                      head_dim, f16, score_scale};
  const int seq = sequence_of(query_start, n_seqs, t);
  a.pos = positions[t];
  const int prefix = has_prefix ? prefix_len[seq] : 0;
  const int first = mask == MASK_SLIDING_WINDOW ? max(0, a.pos - window + 1) : 0;
  const int last = min(kv_len[seq] - 1, mask == MASK_PREFIX_LM ? max(a.pos, prefix - 1) : a.pos);
  for (int d = tid; d < D; d += ATT_THREADS) {
    const float value = q[((long)t * n_heads + head) * D + d] * query_scale;
    // An f16 cache meets f16 queries, as in an f16 matrix multiply.
    q_s[d] = f16 ? round_half(value) : value;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  __global const int* pages = page_indices + page_indptr[seq];

  float row_max = -INFINITY;
  for (int k = first + tid; k <= last; k += ATT_THREADS) row_max = fmax(row_max, attention_score(q_s, keys, pages, slopes, &a, k));
  row_max = work_group_max(row_max, red, tid);
  // An attention sink joins the softmax with a zero value (ops::AttentionParams::sinks).
  if (has_sinks) row_max = fmax(row_max, sinks[head]);

  wide_float sum = 0;  // work-item 0's
  const int aligned = first - first % ATT_LANES;
  for (int tile = aligned; tile <= last; tile += ATT_THREADS) {
    const int k = tile + tid;
    key_group_sums(k >= first && k <= last ? vector_expf(attention_score(q_s, keys, pages, slopes, &a, k) - row_max) : 0.0f,
                   red, tid);
    if (tid == 0) {
      for (int g = 0; g < ATT_THREADS / ATT_LANES && tile + g * ATT_LANES <= last; ++g) sum += (wide_float)red[g * KEY_GROUP_STRIDE];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (tid == 0 && has_sinks) sum += (wide_float)exp(sinks[head] - row_max);
  if (tid == 0) inverse_s = sum > 0 ? (float)((wide_float)1 / sum) : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  const float inverse = inverse_s;

  float acc[ATT_LANES];  // work-item d's 16 lane sums
  for (int l = 0; l < ATT_LANES; ++l) acc[l] = 0.0f;
  for (int tile = aligned; tile <= last; tile += ATT_THREADS) {
    const int k = tile + tid;
    float p = 0.0f;
    if (k >= first && k <= last) {
      p = vector_expf(attention_score(q_s, keys, pages, slopes, &a, k) - row_max) * inverse;
      if (f16) p = round_half(p);
      value_rows[tid] = kv_row_of(pages, &a, k);
    }
    p_s[tid] = p;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid < D) {
      const int in_tile = min(ATT_THREADS, last - tile + 1);
      for (int j0 = 0; j0 < in_tile; j0 += ATT_LANES) {
        for (int l = 0; l < ATT_LANES; ++l) {
          const int key = tile + j0 + l;
          if (j0 + l < in_tile && key >= first) acc[l] = fma(load_kv(values, value_rows[j0 + l] + tid, f16), p_s[j0 + l], acc[l]);
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (tid < D) out[((long)t * n_heads + head) * D + tid] = reduce_16_lanes(acc);
}
