#include "kernels/cpu/embedding.h"

#include "quant/dequantize.h"

namespace tessera::cpu {

void embedding_lookup(DType table_type, const void* table, int64_t dim, const int32_t* ids, int64_t n_tokens, float* out,
                      ThreadPool& pool) {
  const uint64_t row_bytes = *dtype_bytes(table_type, uint64_t(dim));
  const auto* base = static_cast<const uint8_t*>(table);
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) dequantize_row(table_type, base + uint64_t(ids[t]) * row_bytes, out + t * dim, dim);
  });
}

}  // namespace tessera::cpu
