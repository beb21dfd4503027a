#pragma once
// The CPU kernels' exponential (kernels/cpu/elementwise/vector_exp.h), operation for
// operation, so softmax and SiLU give the CPU's bits for the same inputs.
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

__device__ inline float vector_expf(float x) {
  const float shift = 0x1.8p23f;
  const float z = fmaf(x, 0x1.715476p+0f, shift);
  const float n = __fsub_rn(z, shift);
  const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
  if (fabsf(n) > 192.0f) return n > 0.0f ? INFINITY : 0.0f;
  const float u = __fmul_rn(b, b);
  const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                       fmaf(0x1.ffffecp-1f, b, 1.0f));
  const int e = int(n);
  if (e >= -126 && e <= 127) return __fmul_rn(j, __int_as_float((e + 127) << 23));
  return ldexpf(j, e);
}

}  // namespace tessera::gpu
