#pragma once
// Who may hold a connection: a cap on all connections, a cap per client
// address, and a reserve beyond them for the light paths (health, metrics).
// When the reserve is full, the oldest reserved connection that has not yet
// sent a request gives its place to the newcomer, so that idle sockets
// cannot keep a health probe out. A ticket holds its place until destroyed.
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

namespace tessera {

enum class AdmissionClass : uint8_t { kFull, kReserved, kRefused };

struct AdmissionCaps {
  int max_connections = 1024;
  int max_per_client = 256;
  int reserved = 32;
};

// Closes a connection that lost its reserved place; may be empty.
using EvictFn = std::shared_ptr<std::function<void()>>;

class ConnectionAdmission : public std::enable_shared_from_this<ConnectionAdmission> {
 public:
  class Ticket {
   public:
    Ticket() = default;
    Ticket(std::shared_ptr<ConnectionAdmission> book, AdmissionClass cls, std::string client, uint64_t id)
        : book_(std::move(book)), class_(cls), client_(std::move(client)), id_(id) {}
    Ticket(Ticket&&) = default;
    Ticket& operator=(Ticket&&) = default;
    ~Ticket() {
      if (book_) book_->release(class_, client_, id_);
    }
    AdmissionClass admission() const { return class_; }
    // A reserved connection that sent its request can no longer be evicted.
    void mark_busy() {
      if (book_ && class_ == AdmissionClass::kReserved) book_->mark_busy(id_);
    }

   private:
    std::shared_ptr<ConnectionAdmission> book_;
    AdmissionClass class_ = AdmissionClass::kRefused;
    std::string client_;
    uint64_t id_ = 0;
  };

  explicit ConnectionAdmission(const AdmissionCaps& caps) : caps_(caps) {}
  Ticket admit(const std::string& client, EvictFn evict = nullptr);
  int open() const;

 private:
  struct Waiting {
    uint64_t id;
    EvictFn evict;
  };
  void release(AdmissionClass cls, const std::string& client, uint64_t id);
  void mark_busy(uint64_t id);

  AdmissionCaps caps_;
  mutable std::mutex mutex_;
  int full_ = 0;
  int reserved_ = 0;
  uint64_t next_id_ = 1;
  std::map<std::string, int> per_client_;  // full connections by address
  std::list<Waiting> evictable_;           // reserved, no request yet, oldest first
  std::unordered_set<uint64_t> evicted_;   // reserved places already handed on
};

}  // namespace tessera
