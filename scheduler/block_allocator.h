#pragma once
// KV pages as plain bookkeeping: a free list and a reference count per page
// (pages shared by a cached prefix have more than one owner).
#include <cstdint>
#include <optional>
#include <vector>

namespace tessera {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks);

  int32_t total() const { return int32_t(ref_counts_.size()); }
  int32_t free_count() const { return int32_t(free_.size()); }
  // A page with one reference, or nullopt when none is free.
  std::optional<int32_t> allocate();
  void retain(int32_t block);
  // Drops one reference; the page returns to the free list at zero.
  void release(int32_t block);
  int32_t ref_count(int32_t block) const { return ref_counts_.at(size_t(block)); }

 private:
  std::vector<int32_t> free_;
  std::vector<int32_t> ref_counts_;
};

}  // namespace tessera
