#include "server/http/connection_admission.h"

namespace tessera {

ConnectionAdmission::Ticket ConnectionAdmission::admit(const std::string& client, EvictFn evict) {
  EvictFn loser;
  Ticket ticket;
  {
    std::lock_guard lock(mutex_);
    const uint64_t id = next_id_++;
    int& mine = per_client_[client];
    if (full_ < caps_.max_connections && mine < caps_.max_per_client) {
      ++full_;
      ++mine;
      return Ticket(shared_from_this(), AdmissionClass::kFull, client, id);
    }
    if (mine == 0) per_client_.erase(client);
    if (reserved_ >= caps_.reserved) {
      if (evictable_.empty()) return Ticket(nullptr, AdmissionClass::kRefused, client, id);
      // The oldest waiting reserved connection hands its place on.
      loser = std::move(evictable_.front().evict);
      evicted_.insert(evictable_.front().id);
      evictable_.pop_front();
      --reserved_;
    }
    ++reserved_;
    evictable_.push_back({id, std::move(evict)});
    ticket = Ticket(shared_from_this(), AdmissionClass::kReserved, client, id);
  }
  if (loser && *loser) (*loser)();
  return ticket;
}

void ConnectionAdmission::mark_busy(uint64_t id) {
  std::lock_guard lock(mutex_);
  evictable_.remove_if([id](const Waiting& w) { return w.id == id; });
}

void ConnectionAdmission::release(AdmissionClass cls, const std::string& client, uint64_t id) {
  std::lock_guard lock(mutex_);
  if (cls == AdmissionClass::kReserved) {
    if (evicted_.erase(id) > 0) return;  // its place was already handed on
    evictable_.remove_if([id](const Waiting& w) { return w.id == id; });
    --reserved_;
    return;
  }
  --full_;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

int ConnectionAdmission::open() const {
  std::lock_guard lock(mutex_);
  return full_ + reserved_;
}

}  // namespace tessera
