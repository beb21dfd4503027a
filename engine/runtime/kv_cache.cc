#include "engine/runtime/kv_cache.h"

#include "engine/core/error.h"

namespace tessera {

namespace {

// Bytes of one page of keys (or of values) of one layer, scales included.
uint64_t half_page_bytes(const KvLayout& layout) {
  const uint64_t rows = uint64_t(layout.page_size) * uint64_t(layout.n_kv_heads);
  const uint64_t scale_bytes = layout.dtype == DType::kI8 ? sizeof(float) : 0;
  return rows * (uint64_t(layout.head_dim) * dtype_info(layout.dtype).block_bytes + scale_bytes);
}

}  // namespace

DType kv_dtype_from_name(const std::string& name) {
  if (name == "f16") return DType::kF16;
  if (name == "f32") return DType::kF32;
  if (name == "int8") return DType::kI8;
  throw Error("KV cache dtype '" + name + "' is not one of f16, f32, int8");
}

uint64_t PagedKvCache::bytes_per_page(const KvLayout& layout, int n_layers) {
  return 2ull * uint64_t(n_layers) * half_page_bytes(layout);
}

int64_t PagedKvCache::pages_for_budget(const KvLayout& layout, int n_layers, uint64_t budget_bytes) {
  const uint64_t per_page = bytes_per_page(layout, n_layers);
  return per_page == 0 ? 0 : int64_t(budget_bytes / per_page);
}

PagedKvCache::PagedKvCache(Backend& backend, const KvLayout& layout, int n_layers, int64_t n_pages)
    : layout_(layout), n_pages_(n_pages) {
  if (layout.dtype != DType::kF16 && layout.dtype != DType::kF32 && layout.dtype != DType::kI8) {
    throw Error("KV cache: dtype must be f16, f32 or int8");
  }
  if (layout.page_size <= 0 || n_pages <= 0) throw Error("KV cache: page size and page count must be positive");
  if (!backend.supports(Op::kAttention, layout.dtype)) {
    throw Error("KV cache: " + std::string(dtype_name(layout.dtype)) + " pages are not supported by " + backend.describe());
  }
  // An int8 layer's buffer holds its elements, then its scales from the next
  // 64-byte boundary.
  const uint64_t slots = uint64_t(layout.page_size) * uint64_t(n_pages) * uint64_t(layout.n_kv_heads);
  const uint64_t element_bytes = slots * uint64_t(layout.head_dim) * dtype_info(layout.dtype).block_bytes;
  const uint64_t scale_offset = (element_bytes + 63) / 64 * 64;
  const uint64_t layer_bytes = layout.dtype == DType::kI8 ? scale_offset + slots * sizeof(float) : element_bytes;
  Stream& stream = backend.default_stream();
  for (int l = 0; l < n_layers; ++l) {
    DeviceBuffer k(backend, layer_bytes), v(backend, layer_bytes);
    backend.fill_zero(k.data(), layer_bytes, stream);
    backend.fill_zero(v.data(), layer_bytes, stream);
    KvLayer layer{k.data(), v.data()};
    if (layout.dtype == DType::kI8) {
      layer.k_scales = reinterpret_cast<float*>(static_cast<uint8_t*>(k.data()) + scale_offset);
      layer.v_scales = reinterpret_cast<float*>(static_cast<uint8_t*>(v.data()) + scale_offset);
    }
    layers_.push_back(layer);
    buffers_.push_back(std::move(k));
    buffers_.push_back(std::move(v));
  }
  stream.synchronize();
}

}  // namespace tessera
