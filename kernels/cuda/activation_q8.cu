#include "kernels/cuda/activation_q8.cuh"

#include <string>

#include "engine/error.h"

namespace tessera::gpu {
namespace {

// One warp per 32-element chunk: Q8_0 and Q8_1 (chunks run on across rows).
__global__ void quantize_q8_0_kernel(const float* x, int64_t n_chunks, bool with_sums, Q8Rows out) {
  const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (c >= n_chunks) return;
  quantize_chunk_q8_0(x, c, with_sums, int(threadIdx.x) % 32, out);
}

// One warp per 256-element super-block: Q8_K.
__global__ void quantize_q8_k_kernel(const float* x, int64_t n_super_blocks, Q8Rows out) {
  const int64_t sb = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (sb >= n_super_blocks) return;
  quantize_super_block_q8_k(x, sb, int(threadIdx.x) % 32, out);
}

}  // namespace

void launch_quantize_q8(DType activation_type, const float* x, int64_t n_tokens, int64_t cols, const Q8Rows& out,
                        cudaStream_t stream) {
  const int64_t n = n_tokens * cols;
  if (n <= 0) return;
  if (activation_type == DType::kQ8_K) {
    if (cols % 256 != 0) throw Error("quantize: Q8_K rows need multiples of 256 elements");
    const int64_t super_blocks = n / 256;
    quantize_q8_k_kernel<<<unsigned((super_blocks * 32 + 255) / 256), 256, 0, stream>>>(x, super_blocks, out);
  } else {
    const int64_t chunks = n / kQ8Chunk;
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
