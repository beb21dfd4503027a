#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/lane_dot_q8.cuh"
#include "kernels/cuda/gguf_chunks.cuh"

#include <string>

#include "engine/core/error.h"

namespace tessera::gpu {
namespace {

constexpr int kWarpsPerBlock = 4;

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float round_half(float v) { return __half2float(__float2half_rn(v)); }

// To the nearest bf16, ties to even (finite inputs).
__device__ inline float round_bf16(float v) {
  const uint32_t bits = __float_as_uint(v);
  return __uint_as_float((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
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
        float4 a = xs[i];
        // The CPU multiplies f16 (bf16) weights against f16 (bf16) activations.
        if constexpr (T == DType::kF16) a = make_float4(round_half(a.x), round_half(a.y), round_half(a.z), round_half(a.w));
        if constexpr (T == DType::kBF16) a = make_float4(round_bf16(a.x), round_bf16(a.y), round_bf16(a.z), round_bf16(a.w));
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

// GGUF block weights against activations quantized to 8 bits as the CPU
// quantizes them: eight lanes per row (kernels/cuda/lane_dot_q8.cuh), each
// walking the row's blocks in order, so that every output has the CPU's
// bits; NT tokens per block column share each decoded weight word.
constexpr int kRowsPerQ8Block = 32;

template <DType T, int NT>
__global__ void __launch_bounds__(kRowsPerQ8Block * kLanesPerRow) linear_q8_kernel(const uint8_t* w, uint64_t row_stride,
                                                                                   int64_t rows, int64_t cols, Q8Rows x,
                                                                                   int64_t n_tokens, const float* bias,
                                                                                   float* y) {
  const int lane = int(threadIdx.x) % kLanesPerRow;
  const int64_t wanted_row = int64_t(blockIdx.x) * kRowsPerQ8Block + int(threadIdx.x) / kLanesPerRow;
  // Rows past the end compute a copy of the last row, so every lane of the
  // warp takes part in the reductions.
  const int64_t row = min(wanted_row, rows - 1);
  const int64_t t0 = int64_t(blockIdx.y) * NT;
  const int nt = int(min(int64_t(NT), n_tokens - t0));
  const uint8_t* w_row = w + uint64_t(row) * row_stride;
  const int64_t blocks = cols / elements_per_block<T>(), chunks = cols / kChunk;
  LaneSums sums[NT];
  for (int64_t b = 0; b < blocks; ++b) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t >= nt) break;
      const int64_t token = t0 + t;
      lane_block<T>(w_row, b, lane, x.qs + token * cols, x.d + token * chunks, x.s + token * chunks, sums[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t >= nt) break;
    const float total = reduce_lanes<T>(sums[t]);
    if (lane == 0 && wanted_row < rows) y[(t0 + t) * rows + row] = bias ? __fadd_rn(total, bias[row]) : total;
  }
}

// The same products for a few tokens (decode): one warp per row. Its 32
// threads form the integer lane sums of all the row's blocks at once, into
// shared memory, so the row's loads are in flight together; then eight of
// them run the lanes' float chains through the blocks in order. Up to four
// warps a block; fewer where a row's shared words need it (wide rows: an
// 8B model's ffn_down in Q4_0 needs 25 KiB a warp).
constexpr int kWarpsPerQ8WarpBlock = 4;
// Shared words a warp needs per weight block: 8 lane sums and the block's factors.
constexpr int64_t kWarpSharedWordsPerBlock = kLanesPerRow + sizeof(BlockFactors) / sizeof(int);

// The outputs of one linear call that one launch of the warp kernel covers:
// weights of one format reading the same input, their rows laid end to end
// (a layer's q, k and v, or gate and up), so a decode step launches once
// for them all.
constexpr int kMaxOutputsPerLaunch = 4;
struct WarpLaunchOutputs {
  struct Output {
    const uint8_t* w;
    uint64_t row_stride;
    int64_t rows;
    const float* bias;  // (rows), or null
    float* y;           // (n_tokens, rows)
  };
  Output outputs[kMaxOutputsPerLaunch];
  int count = 0;
  int64_t total_rows = 0;
};

template <DType T>
__global__ void __launch_bounds__(kWarpsPerQ8WarpBlock * 32) linear_q8_warp_kernel(WarpLaunchOutputs launch, int64_t cols,
                                                                                  Q8Rows x, int64_t n_tokens) {
  // Per warp: (blocks, 8) lane sums, then (blocks) factors.
  extern __shared__ int lane_sums[];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + warp;
  if (row >= launch.total_rows) return;  // the whole warp
  int k = 0;
  while (k + 1 < launch.count && row >= launch.outputs[k].rows) row -= launch.outputs[k++].rows;
  const WarpLaunchOutputs::Output& out = launch.outputs[k];
  const int64_t blocks = cols / elements_per_block<T>(), chunks = cols / kChunk;
  int* sums_of_row = lane_sums + int64_t(warp) * blocks * kWarpSharedWordsPerBlock;
  BlockFactors* factors = reinterpret_cast<BlockFactors*>(sums_of_row + blocks * kLanesPerRow);
  const uint8_t* w_row = out.w + uint64_t(row) * out.row_stride;
  for (int64_t token = 0; token < n_tokens; ++token) {
    const int8_t* qs = x.qs + token * cols;
    const float *d = x.d + token * chunks, *s = x.s + token * chunks;
    // The lane's first block factors and its lane sums (the loop unrolled)
    // are loaded together, so that the row's loads are in flight at once.
    BlockFactors first;
    if (lane < blocks) first = block_factors<T>(w_row, lane, d, s);
#pragma unroll 4
    for (int64_t item = lane; item < blocks * kLanesPerRow; item += 32) {
      sums_of_row[item] = lane_sumi<T>(w_row, item / kLanesPerRow, int(item % kLanesPerRow), qs);
    }
    if (lane < blocks) factors[lane] = first;
    for (int64_t b = lane + 32; b < blocks; b += 32) factors[b] = block_factors<T>(w_row, b, d, s);
    __syncwarp();
    const int l = lane % kLanesPerRow;  // lanes 8..31 repeat lanes 0..7
    LaneSums sums;
    for (int64_t b = 0; b < blocks; ++b) lane_step<T>(factors[b], l, sums_of_row[b * kLanesPerRow + l], sums);
    const float total = reduce_lanes<T>(sums);
    if (lane == 0) out.y[token * out.rows + row] = out.bias ? __fadd_rn(total, out.bias[row]) : total;
    __syncwarp();
  }
}

constexpr size_t kMaxWarpKernelShared = 48 * 1024;
constexpr int64_t kWarpKernelTokens = 4;  // beyond this, rows are decoded once for eight tokens

// Shared bytes one warp of the warp kernel needs for rows of `cols`.
template <DType T>
size_t warp_kernel_shared_bytes(int64_t cols) {
  return size_t(cols / elements_per_block<T>()) * kWarpSharedWordsPerBlock * sizeof(int);
}

// Warps per block of the warp kernel: as many as fit the shared memory a
// launch may take without raising its limit (0: not even one).
int warps_per_block(size_t shared_per_warp) {
  int warps = kWarpsPerQ8WarpBlock;
  while (warps > 0 && size_t(warps) * shared_per_warp > kMaxWarpKernelShared) warps /= 2;
  return warps;
}

template <DType T, int NT>
void launch_q8_rows(const GpuLinear& w, const Q8Rows& x, int64_t n_tokens, float* y, cudaStream_t stream) {
  const dim3 grid(unsigned((w.rows() + kRowsPerQ8Block - 1) / kRowsPerQ8Block), unsigned((n_tokens + NT - 1) / NT));
  linear_q8_kernel<T, NT><<<grid, kRowsPerQ8Block * kLanesPerRow, 0, stream>>>(w.data(), w.desc().row_stride, w.rows(), w.cols(), x,
                                                                   n_tokens, w.bias(), y);
}

template <DType T, int NT>
void launch_rows(const GpuLinear& w, const float* x, int64_t n_tokens, float* y, cudaStream_t stream) {
  const dim3 grid(unsigned((w.rows() + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned((n_tokens + NT - 1) / NT));
  linear_kernel<T, NT><<<grid, kWarpsPerBlock * 32, 0, stream>>>(w.data(), w.desc().row_stride, w.rows(), w.cols(), x,
                                                                n_tokens, w.bias(), y);
}

const GpuLinear& gpu_linear(const LinearOutput& output) { return static_cast<const GpuLinear&>(*output.weight); }

// Outputs first .. first + count - 1 of a call, all of format T: block
// weights against the quantized input (a few tokens: one launch for them
// all), float weights against the input itself.
template <DType T>
void launch_outputs(const LinearArgs& args, int first, int count, const Q8Rows& quantized, cudaStream_t stream) {
  const int64_t cols = args.outputs[first].weight->cols(), n_tokens = args.n_tokens;
  if constexpr (q8_activation_type(T) != DType::kF32) {
    const int warps = warps_per_block(warp_kernel_shared_bytes<T>(cols));
    if (n_tokens <= kWarpKernelTokens && warps > 0) {
      WarpLaunchOutputs launch;
      for (int i = first; i < first + count; ++i) {
        const GpuLinear& w = gpu_linear(args.outputs[i]);
        launch.outputs[launch.count++] = {w.data(), w.desc().row_stride, w.rows(), w.bias(), args.outputs[i].y};
        launch.total_rows += w.rows();
      }
      const unsigned grid = unsigned((launch.total_rows + warps - 1) / warps);
      const size_t shared = size_t(warps) * warp_kernel_shared_bytes<T>(cols);
      linear_q8_warp_kernel<T><<<grid, warps * 32, shared, stream>>>(launch, cols, quantized, n_tokens);
      return;
    }
  }
  for (int i = first; i < first + count; ++i) {
    const GpuLinear& w = gpu_linear(args.outputs[i]);
    float* y = args.outputs[i].y;
    if constexpr (q8_activation_type(T) != DType::kF32) {
      launch_q8_rows<T, 8>(w, quantized, n_tokens, y, stream);
    } else if (n_tokens == 1) {
      launch_rows<T, 1>(w, args.x, 1, y, stream);  // one token reads each row once
    } else {
      launch_rows<T, 8>(w, args.x, n_tokens, y, stream);  // more tokens share each decoded chunk
    }
  }
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

void launch_linear(const LinearArgs& args, cudaStream_t stream, Q8Scratch& scratch) {
  if (args.n_tokens <= 0 || args.n_outputs <= 0) return;
  if (args.n_tokens > int64_t(65535) * 8) throw Error("linear: " + std::to_string(args.n_tokens) + " tokens in one call");
  const int64_t cols = args.outputs[0].weight->cols();
  Q8Rows quantized{};
  DType quantized_as = DType::kF32;  // what `quantized` holds so far
  for (int first = 0; first < args.n_outputs;) {
    const DType storage = gpu_linear(args.outputs[first]).desc().scheme.storage;
    int count = 1;  // the run of outputs in this format
    while (first + count < args.n_outputs && count < kMaxOutputsPerLaunch &&
           gpu_linear(args.outputs[first + count]).desc().scheme.storage == storage) {
      ++count;
    }
    const DType activation = q8_activation_type(storage);
    if (activation != DType::kF32 && activation != quantized_as) {
      // The outputs of one call read the same input: quantized once per format.
      quantized = q8_rows_at(scratch.reserve(q8_rows_bytes(args.n_tokens, cols), stream), args.n_tokens, cols);
      launch_quantize_q8(activation, args.x, args.n_tokens, cols, quantized, stream);
      quantized_as = activation;
    }
    TESSERA_DISPATCH_CHUNK_DTYPE(storage, throw Error("linear: no CUDA kernel for " + gpu_linear(args.outputs[first]).desc().name),
                                 launch_outputs<T>(args, first, count, quantized, stream))
    first += count;
  }
  check(cudaGetLastError(), "linear launch");
}

}  // namespace tessera::gpu
