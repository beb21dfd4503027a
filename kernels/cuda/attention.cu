#include "kernels/cuda/attention.cuh"

#include <string>

#include "engine/error.h"

namespace tessera::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;  // query heads per KV head

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
  __device__ float operator()(float s, int, int, int) const { return cap * tanhf(s / cap); }
};
struct AlibiScore {
  const float* slopes;
  __device__ float operator()(float s, int head, int q, int k) const { return s + slopes[head] * float(k - q); }
};

struct KernelArgs {
  ops::AttentionBatch batch;
  const float* q;  // (n_tokens, n_heads, head_dim)
  int n_heads;
  ops::PagedKv kv;
  float query_scale, score_scale;
  float* out;      // (n_tokens, n_heads, head_dim)
};

template <typename Element>
__device__ inline float to_float(Element e) {
  if constexpr (sizeof(Element) == 2) return __half2float(e);
  else return e;
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
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

// One block per (query token, KV head), holding every query head of the
// group. Each warp walks its share of the visible keys (key k to warp
// k % kWarps) with an online softmax, each lane owning DPL dimensions of
// each head; the warps' partial results are merged at the end.
template <int DPL, typename Element, class Mask, class Score>
__global__ void __launch_bounds__(kWarps * 32) attention_kernel(KernelArgs a, Mask mask, Score score_mod) {
  constexpr int D = DPL * 32;
  const int t = blockIdx.x, kv_head = blockIdx.y;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const ops::AttentionBatch& b = a.batch;
  const int seq = sequence_of(b.query_start, b.n_seqs, t);
  const int pos = b.positions[t];
  const int prefix = b.prefix_len ? b.prefix_len[seq] : 0;
  const int lo = mask.first(pos), hi = min(b.kv_len[seq] - 1, mask.last(pos, prefix));
  const int group = a.n_heads / a.kv.n_kv_heads;
  const bool f16 = sizeof(Element) == 2;

  float q[kMaxGroup][DPL], acc[kMaxGroup][DPL], m[kMaxGroup], l[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      acc[g][i] = 0.0f;
      q[g][i] = 0.0f;
      if (g < group) {
        const float value = a.q[(int64_t(t) * a.n_heads + kv_head * group + g) * D + lane * DPL + i] * a.query_scale;
        // An f16 cache meets f16 queries, as in an f16 matrix multiply.
        q[g][i] = f16 ? __half2float(__float2half_rn(value)) : value;
      }
    }
  }
  const Element* keys = static_cast<const Element*>(a.kv.k);
  const Element* values = static_cast<const Element*>(a.kv.v);
  const int32_t* pages = b.page_indices + b.page_indptr[seq];
  for (int k = lo + warp; k <= hi; k += kWarps) {
    const int64_t slot = int64_t(pages[k / a.kv.page_size]) * a.kv.page_size + k % a.kv.page_size;
    const int64_t base = (slot * a.kv.n_kv_heads + kv_head) * D + lane * DPL;
    float key[DPL], value[DPL];
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      key[i] = to_float(keys[base + i]);
      value[i] = to_float(values[base + i]);
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g >= group) break;
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < DPL; ++i) dot = fmaf(q[g][i], key[i], dot);
      const float s = score_mod(warp_sum(dot) * a.score_scale, kv_head * group + g, pos, k);
      const float m_new = fmaxf(m[g], s);
      const float correction = expf(m[g] - m_new), p = expf(s - m_new);
      l[g] = l[g] * correction + p;
#pragma unroll
      for (int i = 0; i < DPL; ++i) acc[g][i] = fmaf(p, value[i], acc[g][i] * correction);
      m[g] = m_new;
    }
  }
  // Merge the warps: each rescales its sums to the common maximum.
  __shared__ float shared_m[kWarps][kMaxGroup], shared_l[kWarps][kMaxGroup];
  __shared__ float shared_acc[kWarps][kMaxGroup][D];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g >= group) break;
    if (lane == 0) {
      shared_m[warp][g] = m[g];
      shared_l[warp][g] = l[g];
    }
#pragma unroll
    for (int i = 0; i < DPL; ++i) shared_acc[warp][g][lane * DPL + i] = acc[g][i];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < group * D; idx += blockDim.x) {
    const int g = idx / D, d = idx % D;
    float max_all = -INFINITY;
    for (int w = 0; w < kWarps; ++w) max_all = fmaxf(max_all, shared_m[w][g]);
    float total = 0.0f, sum = 0.0f;
    if (max_all > -INFINITY) {
      for (int w = 0; w < kWarps; ++w) {
        const float f = expf(shared_m[w][g] - max_all);
        total += shared_l[w][g] * f;
        sum += shared_acc[w][g][d] * f;
      }
    }
    a.out[(int64_t(t) * a.n_heads + kv_head * group + g) * D + d] = total > 0.0f ? sum / total : 0.0f;
  }
}

template <int DPL, typename Element, class Mask>
void launch_with_mask(const KernelArgs& k, const ops::AttentionParams& p, Mask mask, dim3 grid, cudaStream_t stream) {
  switch (p.score) {
    case ops::ScoreMod::kNone:
      attention_kernel<DPL, Element><<<grid, kWarps * 32, 0, stream>>>(k, mask, NoScoreMod{});
      break;
    case ops::ScoreMod::kSoftcap:
      attention_kernel<DPL, Element><<<grid, kWarps * 32, 0, stream>>>(k, mask, SoftcapScore{p.softcap});
      break;
    case ops::ScoreMod::kAlibi:
      attention_kernel<DPL, Element><<<grid, kWarps * 32, 0, stream>>>(k, mask, AlibiScore{p.alibi_slopes});
      break;
  }
}

template <int DPL, typename Element>
void launch_typed(const KernelArgs& k, const ops::AttentionParams& p, dim3 grid, cudaStream_t stream) {
  switch (p.mask) {
    case ops::MaskMod::kCausal: launch_with_mask<DPL, Element>(k, p, CausalMask{}, grid, stream); break;
    case ops::MaskMod::kSlidingWindow: launch_with_mask<DPL, Element>(k, p, SlidingWindowMask{p.window}, grid, stream); break;
    case ops::MaskMod::kPrefixLm: launch_with_mask<DPL, Element>(k, p, PrefixLmMask{}, grid, stream); break;
  }
}

template <int DPL>
void launch_sized(const KernelArgs& k, const ops::AttentionParams& p, dim3 grid, cudaStream_t stream) {
  if (k.kv.dtype == DType::kF16) launch_typed<DPL, __half>(k, p, grid, stream);
  else launch_typed<DPL, float>(k, p, grid, stream);
}

}  // namespace

std::string attention_refusal(int n_heads, int n_kv_heads, int head_dim, DType kv_dtype) {
  if (kv_dtype != DType::kF16 && kv_dtype != DType::kF32) {
    return "the CUDA backend has no " + std::string(dtype_name(kv_dtype)) + " KV cache";
  }
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) {
    return "the CUDA backend has no attention kernel for head size " + std::to_string(head_dim);
  }
  if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || n_heads / n_kv_heads > kMaxGroup) {
    return "the CUDA backend groups at most " + std::to_string(kMaxGroup) + " query heads per KV head";
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
  const std::string refusal = attention_refusal(args.n_heads, args.kv.n_kv_heads, args.kv.head_dim, args.kv.dtype);
  if (!refusal.empty()) throw Error("attention: " + refusal);
  const ops::AttentionParams& p = args.params;
  KernelArgs k{plan.batch, args.q, args.n_heads, args.kv, p.scale_queries ? p.scale : 1.0f, p.scale_queries ? 1.0f : p.scale,
               args.out};
  const dim3 grid(unsigned(plan.n_tokens), unsigned(args.kv.n_kv_heads));
  switch (args.kv.head_dim) {
    case 64: launch_sized<2>(k, p, grid, stream); break;
    case 128: launch_sized<4>(k, p, grid, stream); break;
    default: launch_sized<8>(k, p, grid, stream); break;
  }
  check(cudaGetLastError(), "attention launch");
}

}  // namespace tessera::gpu
