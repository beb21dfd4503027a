#include "server/responses/response_store.h"

#include <algorithm>

namespace tessera {

void ResponseStore::drop(const std::string& id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Share& share = shares_[share_key(it->second.stored)];
  share.bytes -= it->second.bytes;
  share.order.remove(id);
  entries_.erase(it);
}

void ResponseStore::evict_expired(std::chrono::steady_clock::time_point now) {
  // Each share's list is oldest first: expired entries sit at its front.
  for (auto& [key, share] : shares_) {
    while (!share.order.empty()) {
      const auto it = entries_.find(share.order.front());
      if (it == entries_.end() || now - it->second.made < limits_.ttl) break;
      share.bytes -= it->second.bytes;
      entries_.erase(it);
      share.order.pop_front();
    }
  }
}

void ResponseStore::put(const std::string& id, StoredResponse stored) {
  const size_t bytes = stored.conversation.dump().size() + stored.response.dump().size();
  std::lock_guard lock(mutex_);
  const auto now = clock_();
  evict_expired(now);
  if (bytes > limits_.max_bytes || limits_.max_responses == 0) return;  // never kept
  drop(id);
  Share& share = shares_[share_key(stored)];
  while (!share.order.empty() && (share.order.size() >= limits_.max_responses || share.bytes + bytes > limits_.max_bytes)) {
    const std::string oldest = share.order.front();
    drop(oldest);
  }
  share.order.push_back(id);
  share.bytes += bytes;
  entries_[id] = Entry{std::move(stored), bytes, now};
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mutex_);
  evict_expired(clock_());
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.stored.owner != owner) return std::nullopt;
  return it->second.stored;
}

bool ResponseStore::remove(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(id);
  if (it == entries_.end() || it->second.stored.owner != owner) return false;
  drop(id);
  return true;
}

size_t ResponseStore::size() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace tessera
