#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/vector_exp.cuh"

#include <string>

#include "engine/core/error.h"
#include "kernels/query_groups.h"

namespace tessera::gpu {
namespace {


struct CausalMask {
  __device__ int first(int) const { return 0; }
  __device__ int last(int q, int) const { return q; }
};
struct SlidingWindowMask {
  int window;
  __device__ int first(int q) const { return max(0, q - window + 1); }
  __device__ int last(int q, int) const { return q; }
};
struct PrefixLmMask {
  __device__ int first(int) const { return 0; }
  __device__ int last(int q, int prefix) const { return max(q, prefix - 1); }
};
struct NoScoreMod {
  __device__ float operator()(float s, int, int, int) const { return s; }
};
struct SoftcapScore {
  float cap;
  __device__ float operator()(float s, int, int, int) const { return __fmul_rn(cap, float(tanh(double(__fdiv_rn(s, cap))))); }
};
struct AlibiScore {
  const float* slopes;
  __device__ float operator()(float s, int head, int q, int k) const { return __fadd_rn(s, __fmul_rn(slopes[head], float(k - q))); }
};

struct KernelArgs {
  ops::AttentionBatch batch;
  const float* q;  // (n_tokens, n_heads, head_dim)
  int n_heads;
  ops::PagedKv kv;
  float query_scale, score_scale;
  float* out;      // (n_tokens, n_heads, head_dim)
  int group, head_offset;  // query head h reads KV head (h + head_offset) / group
  const float* sinks;      // (n_heads) or null: ops::AttentionParams::sinks
};

template <typename Element>
__device__ inline float to_float(Element e) {
  if constexpr (sizeof(Element) == 2) return __half2float(e);
  else return e;
}

// The sequence of token t: the last s with query_start[s] <= t.
__device__ inline int sequence_of(const int32_t* query_start, int n_seqs, int t) {
  int lo = 0, hi = n_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (query_start[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

constexpr int kThreads = 256;  // keys per tile
constexpr int kMaxDim = 256;
constexpr int kLanes = 16;     // the CPU's accumulator width

// The CPU's reduction of 16 lane sums (kernels/cpu/attention/lane_sum.h): halves,
// quarters, then pairs.
__device__ inline float reduce_16_lanes(const float* a) {
  float t3[8], t6[4];
#pragma unroll
  for (int i = 0; i < 8; ++i) t3[i] = __fadd_rn(a[i + 8], a[i]);
#pragma unroll
  for (int i = 0; i < 4; ++i) t6[i] = __fadd_rn(t3[i + 4], t3[i]);
  return __fadd_rn(__fadd_rn(t6[0], t6[2]), __fadd_rn(t6[1], t6[3]));
}

// The same reduction across the 16 threads of a half-warp, each holding one
// lane's value; every thread of the half gets the result.
__device__ inline float reduce_half_warp(float v) {
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ inline float block_max(float v, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, scratch[w]);
  __syncthreads();
  return m;
}

// Keys (or values) of a tile live in shared memory, row j at word j *
// row_words: one spare word per row keeps threads reading one column of
// different rows in different banks.
constexpr int kTileBytes = 34 * 1024;

// Rows a tile holds: as many as fit, at most one per thread, in whole groups of 16.
__device__ inline int tile_rows(int row_words) {
  const int fit = kTileBytes / (row_words * 4);
  return min(kThreads, fit - fit % kLanes);
}

// The CPU's 16-lane dot of the query with one cached row, scaled and modified.
template <typename Element, class Score>
__device__ inline float row_score(const float* q_s, const Element* row, int D, float score_scale, const Score& score_mod,
                                  int head, int pos, int k) {
  float acc[kLanes] = {};
  for (int i = 0; i < D; i += kLanes) {
#pragma unroll
    for (int l = 0; l < kLanes; ++l) acc[l] = fmaf(q_s[i + l], to_float(row[i + l]), acc[l]);
  }
  return score_mod(__fmul_rn(__fadd_rn(reduce_16_lanes(acc), 0.0f), score_scale), head, pos, k);
}

// Lane groups that split a row's 16 value lanes among threads: as many as
// keep one thread per (dimension, group) within the block.
__device__ inline int value_lane_groups(int D) {
  int groups = kLanes;
  while (groups > 1 && groups * D > kThreads) groups /= 2;
  return groups;
}

// One block per (query token, query head), with the CPU's arithmetic
// (kernels/cpu/attention/flex_attention_impl.h) step for step: each score a 16-lane
// dot product, then the maximum, the sum of exponentials over 16-key groups
// aligned to key 0 (in double, group after group), the probabilities
// (rounded to f16 for an f16 cache), and per dimension the 16 lane sums of
// probability times value, keys in order, reduced as the CPU reduces them.
// The keys and values come through shared memory a tile at a time, loaded
// by the whole block in 16-byte words; each pass recomputes the scores
// instead of storing them, so any context length fits. The results are the
// CPU's bits.
template <typename Element, class Mask, class Score>
__global__ void __launch_bounds__(kThreads) attention_kernel(KernelArgs a, Mask mask, Score score_mod) {
  __shared__ uint32_t tile_s[kTileBytes / 4];
  __shared__ float q_s[kMaxDim], p_s[kThreads], partial[kThreads / kLanes], reduce_scratch[kThreads / 32];
  __shared__ float inverse_s;
  const int t = blockIdx.x, head = blockIdx.y, tid = threadIdx.x;
  const int D = a.kv.head_dim, kv_head = (head + a.head_offset) / a.group;
  const ops::AttentionBatch& b = a.batch;
  const int seq = sequence_of(b.query_start, b.n_seqs, t);
  const int pos = b.positions[t];
  const int prefix = b.prefix_len ? b.prefix_len[seq] : 0;
  const int lo = mask.first(pos), hi = min(b.kv_len[seq] - 1, mask.last(pos, prefix));
  const bool f16 = sizeof(Element) == 2;
  for (int d = tid; d < D; d += kThreads) {
    const float value = __fmul_rn(a.q[(int64_t(t) * a.n_heads + head) * D + d], a.query_scale);
    // An f16 cache meets f16 queries, as in an f16 matrix multiply.
    q_s[d] = f16 ? __half2float(__float2half_rn(value)) : value;
  }
  const int32_t* pages = b.page_indices + b.page_indptr[seq];
  auto row_of = [&](int k) {
    const int64_t slot = int64_t(pages[k / a.kv.page_size]) * a.kv.page_size + k % a.kv.page_size;
    return (slot * a.kv.n_kv_heads + kv_head) * D;
  };
  const int row_words = D * int(sizeof(Element)) / 4 + 1;
  const int tile_n = tile_rows(row_words);
  const int vectors = D * int(sizeof(Element)) / 16;  // 16-byte words a row
  // Rows tile .. tile + count - 1 of `cache` into the tile, those before lo
  // (outside the mask; their pages may be gone) left out.
  auto stage = [&](const Element* cache, int tile, int count) {
    for (int e = tid; e < count * vectors; e += kThreads) {
      const int j = e / vectors, v = e % vectors;
      if (tile + j < lo) continue;
      const uint4 x = reinterpret_cast<const uint4*>(cache + row_of(tile + j))[v];
      uint32_t* dst = tile_s + j * row_words + v * 4;
      dst[0] = x.x;
      dst[1] = x.y;
      dst[2] = x.z;
      dst[3] = x.w;
    }
  };
  auto tile_row = [&](int j) { return reinterpret_cast<const Element*>(tile_s + j * row_words); };
  auto score_in_tile = [&](int tile, int j) {
    return row_score(q_s, tile_row(j), D, a.score_scale, score_mod, head, pos, tile + j);
  };
  const Element* keys = static_cast<const Element*>(a.kv.k);
  const Element* values = static_cast<const Element*>(a.kv.v);
  const int aligned = lo - lo % kLanes;
  __syncthreads();

  float row_max = -INFINITY;
  for (int tile = aligned; tile <= hi; tile += tile_n) {
    const int count = min(tile_n, hi - tile + 1);
    stage(keys, tile, count);
    __syncthreads();
    if (tid < count && tile + tid >= lo) row_max = fmaxf(row_max, score_in_tile(tile, tid));
    __syncthreads();
  }
  row_max = block_max(row_max, reduce_scratch);
  if (a.sinks) row_max = fmaxf(row_max, a.sinks[head]);

  double sum = 0.0;  // thread 0's
  for (int tile = aligned; tile <= hi; tile += tile_n) {
    const int count = min(tile_n, hi - tile + 1);
    stage(keys, tile, count);
    __syncthreads();
    const float w = tid < count && tile + tid >= lo ? vector_expf(__fsub_rn(score_in_tile(tile, tid), row_max)) : 0.0f;
    const float group_sum = reduce_half_warp(w);
    if (tid % kLanes == 0) partial[tid / kLanes] = group_sum;
    __syncthreads();
    if (tid == 0) {
      for (int g = 0; g < tile_n / kLanes && tile + g * kLanes <= hi; ++g) sum += double(partial[g]);
    }
    __syncthreads();
  }
  if (tid == 0 && a.sinks) sum += double(expf(__fsub_rn(a.sinks[head], row_max)));
  if (tid == 0) inverse_s = sum > 0.0 ? float(1.0 / sum) : 0.0f;
  __syncthreads();
  const float inverse = inverse_s;

  // Thread (d, group) keeps lanes group * per_group .. + per_group - 1 of
  // dimension d: key j of a tile (aligned to 16) goes to lane j % 16.
  const int groups = value_lane_groups(D), per_group = kLanes / groups;
  const int d = tid % D, group = tid / D;
  float acc[kLanes] = {};
  for (int tile = aligned; tile <= hi; tile += tile_n) {
    const int count = min(tile_n, hi - tile + 1);
    stage(keys, tile, count);
    __syncthreads();
    float p = 0.0f;
    if (tid < count && tile + tid >= lo) {
      p = __fmul_rn(vector_expf(__fsub_rn(score_in_tile(tile, tid), row_max)), inverse);
      if (f16) p = __half2float(__float2half_rn(p));
    }
    p_s[tid] = p;
    __syncthreads();
    stage(values, tile, count);
    __syncthreads();
    if (group < groups) {
      for (int j0 = 0; j0 < count; j0 += kLanes) {
#pragma unroll
        for (int m = 0; m < kLanes; ++m) {
          const int j = j0 + group * per_group + m;
          if (m < per_group && j < count && tile + j >= lo) acc[m] = fmaf(to_float(tile_row(j)[d]), p_s[j], acc[m]);
        }
      }
    }
    __syncthreads();
  }
  float* lanes_s = reinterpret_cast<float*>(tile_s);  // (D, 16)
  if (group < groups) {
#pragma unroll
    for (int m = 0; m < kLanes; ++m) {
      if (m < per_group) lanes_s[d * kLanes + group * per_group + m] = acc[m];
    }
  }
  __syncthreads();
  if (tid < D) a.out[(int64_t(t) * a.n_heads + head) * D + tid] = reduce_16_lanes(lanes_s + tid * kLanes);
}

template <typename Element, class Mask>
void launch_with_mask(const KernelArgs& k, const ops::AttentionParams& p, Mask mask, dim3 grid, cudaStream_t stream) {
  switch (p.score) {
    case ops::ScoreMod::kNone:
      attention_kernel<Element><<<grid, kThreads, 0, stream>>>(k, mask, NoScoreMod{});
      break;
    case ops::ScoreMod::kSoftcap:
      attention_kernel<Element><<<grid, kThreads, 0, stream>>>(k, mask, SoftcapScore{p.softcap});
      break;
    case ops::ScoreMod::kAlibi:
      attention_kernel<Element><<<grid, kThreads, 0, stream>>>(k, mask, AlibiScore{p.alibi_slopes});
      break;
  }
}

template <typename Element>
void launch_typed(const KernelArgs& k, const ops::AttentionParams& p, dim3 grid, cudaStream_t stream) {
  switch (p.mask) {
    case ops::MaskMod::kCausal: launch_with_mask<Element>(k, p, CausalMask{}, grid, stream); break;
    case ops::MaskMod::kSlidingWindow: launch_with_mask<Element>(k, p, SlidingWindowMask{p.window}, grid, stream); break;
    case ops::MaskMod::kPrefixLm: launch_with_mask<Element>(k, p, PrefixLmMask{}, grid, stream); break;
  }
}

}  // namespace

std::string attention_refusal(int head_dim, DType kv_dtype) {
  if (kv_dtype != DType::kF16 && kv_dtype != DType::kF32) {
    return std::string("the ") + kPlatformName + " backend has no " + std::string(dtype_name(kv_dtype)) + " KV cache";
  }
  if (head_dim <= 0 || head_dim % kLanes != 0 || head_dim > kMaxDim) {
    return std::string("the ") + kPlatformName + " backend has no attention kernel for head size " +
           std::to_string(head_dim) + " (multiples of 16 up to 256)";
  }
  return {};
}

void plan_attention(const AttentionPlanArgs& args) {
  auto& plan = static_cast<GpuAttentionPlan&>(*args.plan);
  if (args.n_tokens > plan.max_tokens || args.batch.n_seqs > plan.max_seqs) throw Error("attention plan: batch exceeds its capacity");
  plan.batch = args.batch;
  plan.n_tokens = args.n_tokens;
}

void launch_attention(const AttentionArgs& args, cudaStream_t stream) {
  const auto& plan = static_cast<const GpuAttentionPlan&>(*args.plan);
  if (plan.n_tokens <= 0) return;
  const ops::AttentionParams& p = args.params;
  std::string why = attention_refusal(args.kv.head_dim, args.kv.dtype);
  if (!why.empty()) throw Error("attention: " + why);
  const ops::QueryGroups groups = ops::query_groups(args.n_heads, args.kv.n_kv_heads, p, &why);
  if (!why.empty()) throw Error("attention: " + why);
  // The kernel reads cached rows in 16-byte words.
  if (reinterpret_cast<uintptr_t>(args.kv.k) % 16 != 0 || reinterpret_cast<uintptr_t>(args.kv.v) % 16 != 0) {
    throw Error("attention: the KV pages must start on 16-byte boundaries");
  }
  KernelArgs k{plan.batch, args.q, args.n_heads, args.kv, p.scale_queries ? p.scale : 1.0f, p.scale_queries ? 1.0f : p.scale,
               args.out, groups.group, groups.offset, p.sinks};
  const dim3 grid(unsigned(plan.n_tokens), unsigned(args.n_heads));
  if (args.kv.dtype == DType::kF16) launch_typed<__half>(k, p, grid, stream);
  else launch_typed<float>(k, p, grid, stream);
  check(cudaGetLastError(), "attention launch");
}

}  // namespace tessera::gpu
