#pragma once
// Activations quantized to 8 bits per 32-element chunk on the GPU, as the
// CPU backend quantizes them (kernels/q8_rows.h): Q8_0 for Q4_0/Q5_0/Q8_0
// weights, Q8_1 for Q4_1 and Q8_K for the k-quants, with the CPU's bits.
#include <cstdint>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/cuda/gpu_runtime.h"
#include "kernels/q8_rows.h"

namespace tessera::gpu {

__device__ inline float round_through_half(float v) { return __half2float(__float2half_rn(v)); }

// Chunk c (32 elements) of the row `x` quantized by one warp, a lane per
// element, into `out` (indexed from the row's start): Q8_0, or Q8_1 with
// `with_sums`, with the CPU's bits.
__device__ inline void quantize_chunk_q8_0(const float* x, int64_t c, bool with_sums, int lane, const Q8Rows& out) {
  const float v = x[c * kQ8Chunk + lane];
  float amax = fabsf(v);
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const int q = __float2int_rn(v * id);
  out.qs[c * kQ8Chunk + lane] = int8_t(q);
  int sum = q;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    out.d[c] = round_through_half(d);
    if (with_sums) out.s[c] = round_through_half(d * float(sum));
  }
}

// Super-block sb (256 elements) of the row `x` quantized by one warp, lane
// l holding elements l, l + 32, ..., as Q8_K: scaled by the element of
// largest magnitude (the first such), as the CPU does.
__device__ inline void quantize_super_block_q8_k(const float* x, int64_t sb, int lane, const Q8Rows& out) {
  const float* v = x + sb * 256;
  float values[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) values[i] = v[lane + 32 * i];
  float amax = fabsf(values[0]);
  int index = lane;
#pragma unroll
  for (int i = 1; i < 8; ++i) {
    if (fabsf(values[i]) > amax) amax = fabsf(values[i]), index = lane + 32 * i;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, amax, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other > amax || (other == amax && other_index < index)) amax = other, index = other_index;
  }
  const float iscale = amax == 0.0f ? 0.0f : -127.0f / v[index];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = amax == 0.0f ? 0 : min(127, __float2int_rn(iscale * values[i]));
    out.qs[sb * 256 + lane + 32 * i] = int8_t(q);
    int sum = q;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      out.d[sb * 8 + i] = amax == 0.0f ? 0.0f : 1.0f / iscale;
      out.s[sb * 8 + i] = float(sum);
    }
  }
}

void launch_quantize_q8(DType activation_type, const float* x, int64_t n_tokens, int64_t cols, const Q8Rows& out,
                        cudaStream_t stream);

// Device memory for quantized activations, grown when a larger batch
// arrives. Outgrown buffers are kept until the scratch goes: kernels still
// queued, and recordings made earlier, keep reading theirs.
class Q8Scratch {
 public:
  Q8Scratch() = default;
  Q8Scratch(const Q8Scratch&) = delete;
  Q8Scratch& operator=(const Q8Scratch&) = delete;
  ~Q8Scratch();
  void* reserve(size_t bytes, cudaStream_t stream);

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::vector<void*> retired_;
};

}  // namespace tessera::gpu
