#pragma once
// KV pages as plain bookkeeping: a free list and a reference count per page
// (pages shared by a cached prefix have more than one owner). A page that
// holds a cached prefix keeps its contents when its last owner lets go: it
// waits, least recently used first, until a new allocation needs it.
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <vector>

namespace tessera {

class PageAllocator {
 public:
  explicit PageAllocator(int32_t n_pages);

  int32_t total() const { return int32_t(ref_counts_.size()); }
  // Pages an allocation can get: free ones and unowned cached ones.
  int32_t free_count() const { return int32_t(free_.size() + evictable_.size()); }
  // A page with one reference, or nullopt when none is free. Reusing an
  // unowned cached page calls the eviction callback with it first.
  std::optional<int32_t> allocate();
  void retain(int32_t page);
  // Takes a reference to a cached page, owned or not.
  void reuse(int32_t page);
  // Drops one reference; at zero the page is free, or evictable if cached.
  void release(int32_t page);
  int32_t ref_count(int32_t page) const { return ref_counts_.at(size_t(page)); }

  void set_cached(int32_t page, bool cached) { cached_.at(size_t(page)) = cached; }
  void set_eviction_callback(std::function<void(int32_t)> on_evict) { on_evict_ = std::move(on_evict); }

 private:
  std::vector<int32_t> free_;
  std::vector<int32_t> ref_counts_;
  std::vector<bool> cached_;
  std::list<int32_t> evictable_;  // unowned cached pages, oldest first
  std::vector<std::list<int32_t>::iterator> evictable_at_;
  std::function<void(int32_t)> on_evict_;
};

}  // namespace tessera
