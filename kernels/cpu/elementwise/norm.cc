#include "kernels/cpu/elementwise/norm.h"

#include <cmath>

namespace tessera::cpu {

void rms_norm(const float* x, const float* weight, float weight_offset, float eps, int64_t n_rows, int64_t dim,
              float* out, ThreadPool& pool) {
  pool.parallel_for(n_rows, 4, [&](int, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x + r * dim;
      double sum_sq = 0.0;
      for (int64_t i = 0; i < dim; ++i) sum_sq += double(row[i] * row[i]);  // as ggml sums
      const float scale = 1.0f / std::sqrt(float(sum_sq / double(dim)) + eps);
      float* dst = out + r * dim;
      for (int64_t i = 0; i < dim; ++i) dst[i] = row[i] * scale * (weight[i] + weight_offset);
    }
  });
}

}  // namespace tessera::cpu
