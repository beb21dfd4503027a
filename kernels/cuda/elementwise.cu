#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gguf_chunks.cuh"
#include "kernels/cuda/vector_exp.cuh"

#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace tessera::gpu {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

// One thread per 32-element chunk of the looked-up rows; ids outside the
// table's rows (a vocabulary-parallel shard) give zeros.
template <DType T>
__global__ void embedding_kernel(const uint8_t* table, uint64_t row_bytes, int64_t first_id, int64_t n_rows, int64_t dim,
                                 const int32_t* ids, int64_t n_tokens, float* out) {
  const int64_t chunks_per_row = dim / kChunk;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tokens * chunks_per_row) return;
  const int64_t t = i / chunks_per_row, c = i % chunks_per_row;
  const int64_t row = int64_t(ids[t]) - first_id;
  float v[kChunk];
  if (row < 0 || row >= n_rows) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = 0.0f;
  } else {
    decode_chunk<T>(table + uint64_t(row) * row_bytes, c, v);
  }
  float* dst = out + t * dim + c * kChunk;
#pragma unroll
  for (int j = 0; j < kChunk; ++j) dst[j] = v[j];
}

// One block per row: the sum of squares in double, in parallel. Each
// square is rounded to f32 as the CPU rounds it; a double sum of such
// squares is exact while their exponents span under 29 bits, so it does not
// depend on the order of the additions, and where it does (a square 2^29
// times smaller than the sum), the order moves it by ~2^-52 of itself: the
// f32 mean then differs from the CPU's sequential sum only if it lies that
// close to a rounding boundary. The reduction order here is fixed (each
// thread's strided run, then a shuffle tree per warp, then the warps in
// order), so a row's result never depends on the rest of the batch.
static_assert(kThreads % 32 == 0 && kThreads <= 1024);

__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const float* x, const float* weight, float weight_offset,
                                                            float eps, int64_t dim, float* out) {
  __shared__ double warp_sums[kThreads / 32];
  __shared__ float scale_s;
  const float* row = x + int64_t(blockIdx.x) * dim;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float v = row[i];
    sum += double(__fmul_rn(v, v));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    scale_s = 1.0f / sqrtf(float(total / double(dim)) + eps);
  }
  __syncthreads();
  const float scale = scale_s;
  float* dst = out + int64_t(blockIdx.x) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) dst[i] = __fmul_rn(__fmul_rn(row[i], scale), weight[i] + weight_offset);
}

// One thread per (token, head, pair). The angles' cosines and sines come
// from the host's table (ops::rope_table) for positions inside it; past it,
// ggml's angles advance by repeated multiplication, and the sine and cosine
// are taken in double and rounded.
__global__ void rope_kernel(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, int head_dim,
                            ops::RopeParams p, float theta_scale) {
  const int pairs = p.rotary_dim / 2;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_tokens * n_heads * pairs) return;
  const int i = int(idx % pairs);
  const int64_t token_head = idx / pairs;
  const int64_t t = token_head / n_heads;
  const int32_t position = positions[t];
  float s, c;
  if (p.cos_table && position >= 0 && position < p.table_positions) {
    c = p.cos_table[int64_t(position) * pairs + i];
    s = p.cos_table[(int64_t(p.table_positions) + position) * pairs + i];
  } else {
    const float pos = float(position);
    float angle;
    if (p.numerics == ops::RopeNumerics::kFrequencyTable) {
      angle = __fmul_rn(p.inv_freq[i], pos);
    } else {
      float theta = pos;
      for (int k = 0; k < i; ++k) theta = __fmul_rn(theta, theta_scale);
      const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
      angle = __fmul_rn(p.freq_scale, __fdiv_rn(theta, ff));
    }
    double sd, cd;
    sincos(double(angle), &sd, &cd);
    s = float(sd);
    c = float(cd);
  }
  float* v = x + token_head * head_dim;
  const int a = p.style == ops::RopeStyle::kInterleaved ? 2 * i : i;
  const int b = p.style == ops::RopeStyle::kInterleaved ? 2 * i + 1 : i + pairs;
  const float x0 = v[a], x1 = v[b];
  if (p.numerics == ops::RopeNumerics::kGgml) {
    v[a] = fmaf(x0, c, -__fmul_rn(x1, s));
    v[b] = fmaf(x0, s, __fmul_rn(x1, c));
  } else {
    v[a] = __fadd_rn(__fmul_rn(x0, c), __fmul_rn(-x1, s));
    v[b] = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
  }
}

// tanh in double, then rounded, as the CPU's library gives it.
__device__ inline float tanh_rounded(float x) { return float(tanh(double(x))); }

// The fused form builds llama.cpp's table (kGeluTanhTable); the plain one is kGeluTanh.
__device__ inline float gelu_tanh(float x, bool fused) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCoeff = 0.044715f;
  const float inner = fused ? fmaf(__fmul_rn(kCoeff, x), x, 1.0f) : __fadd_rn(1.0f, __fmul_rn(__fmul_rn(kCoeff, x), x));
  return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanh_rounded(__fmul_rn(__fmul_rn(kSqrt2OverPi, x), inner))));
}

__global__ void gated_activation_kernel(ops::GatedActivation act, const float* gate, const float* up, int64_t n, float* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  float a;
  switch (act) {
    case ops::GatedActivation::kSilu: a = __fdiv_rn(g, __fadd_rn(1.0f, vector_expf(-g))); break;
    case ops::GatedActivation::kGeluTanh: a = gelu_tanh(g, false); break;
    case ops::GatedActivation::kSiluClampedOai: {
      const float x = fminf(g, ops::kOaiSwiGluLimit);
      const float u = fminf(fmaxf(up[i], -ops::kOaiSwiGluLimit), ops::kOaiSwiGluLimit);
      out[i] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(__fmul_rn(ops::kOaiSwiGluAlpha, -x)))), __fadd_rn(u, 1.0f));
      return;
    }
    default:
      // llama.cpp's table: input and result rounded to f16, the tails exact.
      a = g <= -10.0f ? 0.0f : g >= 10.0f ? g : __half2float(__float2half_rn(gelu_tanh(__half2float(__float2half_rn(g)), true)));
      break;
  }
  out[i] = __fmul_rn(a, up[i]);
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

__global__ void softcap_kernel(float* x, int64_t n, float cap) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __fmul_rn(cap, tanh_rounded(__fdiv_rn(x[i], cap)));
}

__global__ void gather_rows_kernel(const float* x, int64_t width, const int32_t* rows, int64_t n_rows, float* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * width) return;
  const int64_t r = i / width, c = i % width;
  out[i] = x[int64_t(rows[r]) * width + c];
}

// Rounded as the CPU's x + s * y, unfused.
__global__ void scatter_add_rows_kernel(float* x, int64_t width, const int32_t* rows, const float* scales, int64_t n_rows,
                                        const float* y) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * width) return;
  const int64_t r = i / width, c = i % width;
  float* out = x + int64_t(rows[r]) * width + c;
  *out = __fadd_rn(*out, __fmul_rn(scales[r], y[i]));
}

template <typename Element>
__global__ void kv_write_kernel(Element* k_pages, Element* v_pages, int64_t row, const int64_t* slots, int64_t n_tokens,
                                const float* k, const float* v) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tokens * row) return;
  const int64_t t = i / row, j = i % row;
  const int64_t dst = slots[t] * row + j;
  if constexpr (sizeof(Element) == 2) {
    k_pages[dst] = __float2half_rn(k[i]);
    v_pages[dst] = __float2half_rn(v[i]);
  } else {
    k_pages[dst] = k[i];
    v_pages[dst] = v[i];
  }
}

}  // namespace

void launch_embedding(const EmbeddingArgs& a, cudaStream_t stream) {
  if (a.n_tokens <= 0) return;
  if (a.dim % kChunk != 0) throw Error("embedding: the CUDA backend needs rows in multiples of 32 elements");
  const uint64_t row_bytes = *dtype_bytes(a.table_dtype, uint64_t(a.dim));
  const int64_t n = a.n_tokens * (a.dim / kChunk);
  const auto* table = static_cast<const uint8_t*>(a.table);
  TESSERA_DISPATCH_CHUNK_DTYPE(a.table_dtype, throw Error("embedding: no CUDA kernel for " + std::string(dtype_name(a.table_dtype))),
                               embedding_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(table, row_bytes, a.first_id, a.n_rows,
                                                                                         a.dim, a.ids, a.n_tokens, a.out))
  check(cudaGetLastError(), "embedding launch");
}

void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.n_rows <= 0) return;
  rms_norm_kernel<<<unsigned(a.n_rows), kThreads, 0, stream>>>(a.x, a.weight, a.weight_offset, a.eps, a.dim, a.out);
  check(cudaGetLastError(), "rms_norm launch");
}

void launch_rope(const RopeArgs& a, cudaStream_t stream) {
  const int64_t n = a.n_tokens * a.n_heads * (a.rope.rotary_dim / 2);
  if (n <= 0) return;
  // As the CPU computes it (kernels/cpu/elementwise/rope.cc): the float power.
  const float theta_scale = std::pow(a.rope.freq_base, -2.0f / float(a.rope.rotary_dim));
  rope_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a.x, a.positions, a.n_tokens, a.n_heads, a.head_dim, a.rope, theta_scale);
  check(cudaGetLastError(), "rope launch");
}

void launch_gated_activation(const GatedActivationArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  gated_activation_kernel<<<blocks_for(a.n), kThreads, 0, stream>>>(a.act, a.gate, a.up, a.n, a.out);
  check(cudaGetLastError(), "gated activation launch");
}

void launch_add(const AddArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  add_kernel<<<blocks_for(a.n), kThreads, 0, stream>>>(a.x, a.y, a.n);
  check(cudaGetLastError(), "add launch");
}

void launch_scale(const ScaleArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  scale_kernel<<<blocks_for(a.n), kThreads, 0, stream>>>(a.x, a.n, a.factor);
  check(cudaGetLastError(), "scale launch");
}

void launch_softcap(const SoftcapArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  softcap_kernel<<<blocks_for(a.n), kThreads, 0, stream>>>(a.x, a.n, a.cap);
  check(cudaGetLastError(), "softcap launch");
}

void launch_gather_rows(const GatherRowsArgs& a, cudaStream_t stream) {
  const int64_t n = a.n_rows * a.width;
  if (n <= 0) return;
  gather_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a.x, a.width, a.rows, a.n_rows, a.out);
  check(cudaGetLastError(), "gather rows launch");
}

void launch_scatter_add_rows(const ScatterAddRowsArgs& a, cudaStream_t stream) {
  const int64_t n = a.n_rows * a.width;
  if (n <= 0) return;
  scatter_add_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a.x, a.width, a.rows, a.scales, a.n_rows, a.y);
  check(cudaGetLastError(), "scatter add rows launch");
}

void launch_kv_write(const KvWriteArgs& a, cudaStream_t stream) {
  const int64_t n = a.n_tokens * a.row;
  if (n <= 0) return;
  if (a.dtype == DType::kF16) {
    kv_write_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__half*>(a.k_pages), static_cast<__half*>(a.v_pages),
                                                            a.row, a.slots, a.n_tokens, a.k, a.v);
  } else if (a.dtype == DType::kF32) {
    kv_write_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(a.k_pages), static_cast<float*>(a.v_pages),
                                                            a.row, a.slots, a.n_tokens, a.k, a.v);
  } else {
    throw Error("kv_write: the CUDA backend has no " + std::string(dtype_name(a.dtype)) + " cache");
  }
  check(cudaGetLastError(), "kv_write launch");
}

}  // namespace tessera::gpu
