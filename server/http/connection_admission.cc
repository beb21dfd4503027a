#include "server/http/connection_admission.h"

namespace tessera {

ConnectionAdmission::Ticket ConnectionAdmission::admit(const std::string& client) {
  std::lock_guard lock(mutex_);
  int& mine = per_client_[client];
  if (full_ < caps_.max_connections && mine < caps_.max_per_client) {
    ++full_;
    ++mine;
    return Ticket(shared_from_this(), AdmissionClass::kFull, client);
  }
  if (mine == 0) per_client_.erase(client);
  if (reserved_ < caps_.reserved) {
    ++reserved_;
    return Ticket(shared_from_this(), AdmissionClass::kReserved, client);
  }
  return Ticket(nullptr, AdmissionClass::kRefused, client);
}

void ConnectionAdmission::release(AdmissionClass cls, const std::string& client) {
  std::lock_guard lock(mutex_);
  if (cls == AdmissionClass::kReserved) {
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
