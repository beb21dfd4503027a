#include "scheduler/block_allocator.h"

#include <stdexcept>
#include <string>

namespace tessera {

BlockAllocator::BlockAllocator(int32_t n_blocks)
    : ref_counts_(size_t(n_blocks), 0), cached_(size_t(n_blocks), false), evictable_at_(size_t(n_blocks)) {
  free_.reserve(size_t(n_blocks));
  // Low page numbers are handed out first.
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockAllocator::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!evictable_.empty()) {
    b = evictable_.front();
    evictable_.pop_front();
    cached_[size_t(b)] = false;
    if (on_evict_) on_evict_(b);
  } else {
    return std::nullopt;
  }
  ref_counts_[size_t(b)] = 1;
  return b;
}

void BlockAllocator::retain(int32_t block) {
  if (ref_counts_.at(size_t(block)) <= 0) throw std::logic_error("retain of free page " + std::to_string(block));
  ++ref_counts_[size_t(block)];
}

void BlockAllocator::reuse(int32_t block) {
  if (!cached_.at(size_t(block))) throw std::logic_error("reuse of uncached page " + std::to_string(block));
  if (ref_counts_[size_t(block)]++ == 0) evictable_.erase(evictable_at_[size_t(block)]);
}

void BlockAllocator::release(int32_t block) {
  int32_t& count = ref_counts_.at(size_t(block));
  if (count <= 0) throw std::logic_error("release of free page " + std::to_string(block));
  if (--count > 0) return;
  if (cached_[size_t(block)]) {
    evictable_at_[size_t(block)] = evictable_.insert(evictable_.end(), block);
  } else {
    free_.push_back(block);
  }
}

}  // namespace tessera
