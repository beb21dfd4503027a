#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/gguf_chunks.cuh"

#include <string>

#include "engine/core/error.h"

namespace tessera::gpu {
namespace {

// One thread per 32-element chunk.
template <DType T>
__global__ void dequantize_kernel(const uint8_t* src, float* dst, int64_t n_chunks) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= n_chunks) return;
  float v[kChunk];
  decode_chunk<T>(src, c, v);
#pragma unroll
  for (int i = 0; i < kChunk; ++i) dst[c * kChunk + i] = v[i];
}

}  // namespace

bool can_dequantize(DType dtype) { return chunk_decodable(dtype); }

void launch_dequantize(const DequantizeArgs& args, cudaStream_t stream) {
  if (!can_dequantize(args.src_dtype)) {
    throw Error("dequantize: no " + std::string(kPlatformName) + " kernel for " + std::string(dtype_name(args.src_dtype)));
  }
  const DTypeInfo& info = dtype_info(args.src_dtype);
  if (args.n_elems < 0 || args.n_elems % info.block_elems != 0 || args.n_elems % kChunk != 0) {
    throw Error("dequantize: " + std::to_string(args.n_elems) + " elements is not a whole number of blocks");
  }
  if (args.n_elems == 0) return;
  constexpr int kThreads = 128;
  const int64_t chunks = args.n_elems / kChunk;
  const unsigned grid = unsigned((chunks + kThreads - 1) / kThreads);
  const auto* src = static_cast<const uint8_t*>(args.src);
  TESSERA_DISPATCH_CHUNK_DTYPE(args.src_dtype, {}, dequantize_kernel<T><<<grid, kThreads, 0, stream>>>(src, args.dst, chunks))
  check(cudaGetLastError(), "dequantize launch");
}

}  // namespace tessera::gpu
