#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/gguf_chunks.cuh"

#include <string>

#include "engine/error.h"

namespace tessera::gpu {
namespace {

constexpr int kWarpsPerBlock = 4;

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per weight row and NT tokens per block column: each lane decodes
// the row's chunks lane, lane + 32, … once and multiplies every token of its
// column by them, so a row is read once per NT tokens.
// x: (n_tokens, cols); y: (n_tokens, rows).
template <DType T, int NT>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) linear_kernel(const uint8_t* w, uint64_t row_stride, int64_t rows,
                                                                     int64_t cols, const float* x, int64_t n_tokens,
                                                                     const float* bias, float* y) {
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  const int64_t t0 = int64_t(blockIdx.y) * NT;
  if (row >= rows) return;
  const uint8_t* w_row = w + uint64_t(row) * row_stride;
  const int64_t chunks = cols / kChunk;
  const int nt = int(min(int64_t(NT), n_tokens - t0));
  float acc[NT] = {};
  for (int64_t c = lane; c < chunks; c += 32) {
    float v[kChunk];
    decode_chunk<T>(w_row, c, v);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t >= nt) break;
      const float4* xs = reinterpret_cast<const float4*>(x + (t0 + t) * cols + c * kChunk);
      float sum = acc[t];
#pragma unroll
      for (int i = 0; i < kChunk / 4; ++i) {
        const float4 a = xs[i];
        sum = fmaf(v[4 * i], a.x, sum);
        sum = fmaf(v[4 * i + 1], a.y, sum);
        sum = fmaf(v[4 * i + 2], a.z, sum);
        sum = fmaf(v[4 * i + 3], a.w, sum);
      }
      acc[t] = sum;
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t >= nt) break;
    const float total = warp_sum(acc[t]);
    if (lane == 0) y[(t0 + t) * rows + row] = bias ? total + bias[row] : total;
  }
}

template <DType T, int NT>
void launch_rows(const GpuLinear& w, const float* x, int64_t n_tokens, float* y, cudaStream_t stream) {
  const dim3 grid(unsigned((w.rows() + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned((n_tokens + NT - 1) / NT));
  linear_kernel<T, NT><<<grid, kWarpsPerBlock * 32, 0, stream>>>(w.data(), w.desc().row_stride, w.rows(), w.cols(), x,
                                                                n_tokens, w.bias(), y);
}

}  // namespace

std::string linear_refusal(const QuantizedLinear& weight) {
  const WeightScheme& s = weight.scheme;
  if (!chunk_decodable(s.storage) || s.has_zero_points || s.activation != ActivationPolicy::kNone) {
    return "the CUDA backend has no linear kernel for " + s.describe();
  }
  if (weight.scales || weight.zero_points || weight.input_order) return "the CUDA backend reads no separate scales or input order";
  if (weight.cols % kChunk != 0) return "the CUDA backend needs input features in multiples of 32, not " + std::to_string(weight.cols);
  return {};
}

void launch_linear(const LinearArgs& args, cudaStream_t stream) {
  if (args.n_tokens <= 0) return;
  if (args.n_tokens > int64_t(65535) * 8) throw Error("linear: " + std::to_string(args.n_tokens) + " tokens in one call");
  for (int i = 0; i < args.n_outputs; ++i) {
    const auto& w = static_cast<const GpuLinear&>(*args.outputs[i].weight);
    float* y = args.outputs[i].y;
    // One token reads each row once; more tokens share each decoded chunk.
    TESSERA_DISPATCH_CHUNK_DTYPE(w.desc().scheme.storage, throw Error("linear: no CUDA kernel for " + w.desc().name),
                                 if (args.n_tokens == 1) launch_rows<T, 1>(w, args.x, 1, y, stream);
                                 else launch_rows<T, 8>(w, args.x, args.n_tokens, y, stream))
  }
  check(cudaGetLastError(), "linear launch");
}

}  // namespace tessera::gpu
