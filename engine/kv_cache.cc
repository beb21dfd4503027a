#include "engine/kv_cache.h"

#include "engine/error.h"

namespace tessera {

uint64_t PagedKvCache::bytes_per_page(const KvLayout& layout, int n_layers) {
  const uint64_t elem = layout.dtype == DType::kF32 ? 4 : 2;
  return 2ull * uint64_t(n_layers) * uint64_t(layout.page_size) * uint64_t(layout.n_kv_heads) * uint64_t(layout.head_dim) * elem;
}

int64_t PagedKvCache::pages_for_budget(const KvLayout& layout, int n_layers, uint64_t budget_bytes) {
  const uint64_t per_page = bytes_per_page(layout, n_layers);
  return per_page == 0 ? 0 : int64_t(budget_bytes / per_page);
}

PagedKvCache::PagedKvCache(Backend& backend, const KvLayout& layout, int n_layers, int64_t n_pages)
    : layout_(layout), n_pages_(n_pages) {
  if (layout.dtype != DType::kF16 && layout.dtype != DType::kF32) throw Error("KV cache: dtype must be f16 or f32");
  if (layout.page_size <= 0 || n_pages <= 0) throw Error("KV cache: page size and page count must be positive");
  if (!backend.supports(Op::kAttention, layout.dtype)) {
    throw Error("KV cache: " + std::string(dtype_name(layout.dtype)) + " pages are not supported by " + backend.describe());
  }
  const uint64_t layer_bytes = bytes_per_page(layout, 1) / 2 * uint64_t(n_pages);
  Stream& stream = backend.default_stream();
  for (int l = 0; l < n_layers; ++l) {
    DeviceBuffer k(backend, layer_bytes), v(backend, layer_bytes);
    backend.fill_zero(k.data(), layer_bytes, stream);
    backend.fill_zero(v.data(), layer_bytes, stream);
    layers_.push_back({k.data(), v.data()});
    buffers_.push_back(std::move(k));
    buffers_.push_back(std::move(v));
  }
  stream.synchronize();
}

}  // namespace tessera
