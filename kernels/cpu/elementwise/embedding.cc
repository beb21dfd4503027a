#include "kernels/cpu/elementwise/embedding.h"

#include <algorithm>

#include "quant/dequantize.h"

namespace tessera::cpu {

void embedding_lookup(const EmbeddingArgs& a, ThreadPool& pool) {
  const uint64_t row_bytes = *dtype_bytes(a.table_dtype, uint64_t(a.dim));
  const auto* base = static_cast<const uint8_t*>(a.table);
  pool.parallel_for(a.n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = int64_t(a.ids[t]) - a.first_id;
      float* out = a.out + t * a.dim;
      if (row < 0 || row >= a.n_rows) {
        std::fill(out, out + a.dim, 0.0f);
      } else {
        dequantize_row(a.table_dtype, base + uint64_t(row) * row_bytes, out, a.dim);
      }
    }
  });
}

}  // namespace tessera::cpu
