#pragma once
// The paged KV cache: for every layer, a pool of fixed-size pages of keys and
// of values in the backend's memory, sized from a memory budget at start.
// The scheduler hands out page numbers; the engine owns the memory.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "models/decoder.h"

namespace tessera {

// The KV cache element types by their configuration names: f16, f32, int8.
DType kv_dtype_from_name(const std::string& name);

class PagedKvCache {
 public:
  // Pages are zeroed, so a never-written slot only ever holds finite values.
  PagedKvCache(Backend& backend, const KvLayout& layout, int n_layers, int64_t n_pages);

  // Pages that fit in `budget_bytes` for this geometry (at least 0).
  static int64_t pages_for_budget(const KvLayout& layout, int n_layers, uint64_t budget_bytes);
  static uint64_t bytes_per_page(const KvLayout& layout, int n_layers);

  const KvLayout& layout() const { return layout_; }
  int64_t n_pages() const { return n_pages_; }
  const std::vector<KvLayer>& layers() const { return layers_; }

 private:
  KvLayout layout_;
  int64_t n_pages_;
  std::vector<DeviceBuffer> buffers_;  // k and v of each layer
  std::vector<KvLayer> layers_;
};

}  // namespace tessera
