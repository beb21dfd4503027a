#include "kernels/cuda/activation_q8.cuh"

#include <string>

#include "engine/core/error.h"

namespace tessera::gpu {
namespace {

constexpr int kChunk = 32;

__device__ inline float round_through_half(float v) { return __half2float(__float2half_rn(v)); }

// One warp per 32-element chunk, one lane per element: Q8_0 and Q8_1.
__global__ void quantize_q8_0_kernel(const float* x, int64_t n_chunks, bool with_sums, Q8Rows out) {
  const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = int(threadIdx.x) % 32;
  if (c >= n_chunks) return;
  const float v = x[c * kChunk + lane];
  float amax = fabsf(v);
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const int q = __float2int_rn(v * id);
  out.qs[c * kChunk + lane] = int8_t(q);
  int sum = q;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    out.d[c] = round_through_half(d);
    if (with_sums) out.s[c] = round_through_half(d * float(sum));
  }
}

// One block of 256 threads per 256-element super-block: Q8_K, scaled by the
// element of largest magnitude (the first such), as the CPU does.
__global__ void quantize_q8_k_kernel(const float* x, Q8Rows out) {
  __shared__ float warp_amax[8];
  __shared__ int warp_index[8];
  const int64_t block = blockIdx.x;
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const float v = x[block * 256 + tid];
  float amax = fabsf(v);
  int index = tid;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, amax, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other > amax || (other == amax && other_index < index)) amax = other, index = other_index;
  }
  if (lane == 0) warp_amax[warp] = amax, warp_index[warp] = index;
  __syncthreads();
  float best = warp_amax[0];
  int best_index = warp_index[0];
  for (int w = 1; w < 8; ++w) {
    if (warp_amax[w] > best) best = warp_amax[w], best_index = warp_index[w];
  }
  const int64_t chunk = block * 8 + warp;
  if (best == 0.0f) {
    out.qs[block * 256 + tid] = 0;
    if (lane == 0) out.d[chunk] = 0.0f, out.s[chunk] = 0.0f;
    return;
  }
  const float iscale = -127.0f / x[block * 256 + best_index];
  const int q = min(127, __float2int_rn(iscale * v));
  out.qs[block * 256 + tid] = int8_t(q);
  int sum = q;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    out.d[chunk] = 1.0f / iscale;
    out.s[chunk] = float(sum);
  }
}

}  // namespace

void launch_quantize_q8(DType activation_type, const float* x, int64_t n_tokens, int64_t cols, const Q8Rows& out,
                        cudaStream_t stream) {
  const int64_t n = n_tokens * cols;
  if (n <= 0) return;
  if (activation_type == DType::kQ8_K) {
    if (cols % 256 != 0) throw Error("quantize: Q8_K rows need multiples of 256 elements");
    quantize_q8_k_kernel<<<unsigned(n / 256), 256, 0, stream>>>(x, out);
  } else {
    const int64_t chunks = n / kChunk;
    quantize_q8_0_kernel<<<unsigned((chunks * 32 + 255) / 256), 256, 0, stream>>>(x, chunks, activation_type == DType::kQ8_1, out);
  }
  check(cudaGetLastError(), "quantize launch");
}

Q8Scratch::~Q8Scratch() {
  for (void* p : retired_) cudaFree(p);
  if (data_) cudaFree(data_);
}

void* Q8Scratch::reserve(size_t bytes, cudaStream_t) {
  if (bytes <= size_) return data_;
  void* grown = nullptr;
  check(cudaMalloc(&grown, bytes), ("allocate " + std::to_string(bytes) + " bytes of activation scratch").c_str());
  if (data_) retired_.push_back(data_);
  data_ = grown;
  size_ = bytes;
  return data_;
}

}  // namespace tessera::gpu
