#include "scheduler/page_allocator.h"

#include <stdexcept>
#include <string>

namespace tessera {

PageAllocator::PageAllocator(int32_t n_pages)
    : ref_counts_(size_t(n_pages), 0), cached_(size_t(n_pages), false), evictable_at_(size_t(n_pages)) {
  free_.reserve(size_t(n_pages));
  // Low page numbers are handed out first.
  for (int32_t b = n_pages - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> PageAllocator::allocate() {
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

void PageAllocator::retain(int32_t page) {
  if (ref_counts_.at(size_t(page)) <= 0) throw std::logic_error("retain of free page " + std::to_string(page));
  ++ref_counts_[size_t(page)];
}

void PageAllocator::reuse(int32_t page) {
  if (!cached_.at(size_t(page))) throw std::logic_error("reuse of uncached page " + std::to_string(page));
  if (ref_counts_[size_t(page)]++ == 0) evictable_.erase(evictable_at_[size_t(page)]);
}

void PageAllocator::release(int32_t page) {
  int32_t& count = ref_counts_.at(size_t(page));
  if (count <= 0) throw std::logic_error("release of free page " + std::to_string(page));
  if (--count > 0) return;
  if (cached_[size_t(page)]) {
    evictable_at_[size_t(page)] = evictable_.insert(evictable_.end(), page);
  } else {
    free_.push_back(page);
  }
}

}  // namespace tessera
