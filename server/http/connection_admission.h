#pragma once
// Who may hold a connection: a cap on all connections, a cap per client
// address, and a reserve beyond them for the light paths (health, metrics).
// A ticket holds its place until destroyed.
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tessera {

enum class AdmissionClass : uint8_t { kFull, kReserved, kRefused };

struct AdmissionCaps {
  int max_connections = 1024;
  int max_per_client = 256;
  int reserved = 32;
};

class ConnectionAdmission : public std::enable_shared_from_this<ConnectionAdmission> {
 public:
  class Ticket {
   public:
    Ticket() = default;
    Ticket(std::shared_ptr<ConnectionAdmission> book, AdmissionClass cls, std::string client)
        : book_(std::move(book)), class_(cls), client_(std::move(client)) {}
    Ticket(Ticket&&) = default;
    Ticket& operator=(Ticket&&) = default;
    ~Ticket() {
      if (book_) book_->release(class_, client_);
    }
    AdmissionClass admission() const { return class_; }

   private:
    std::shared_ptr<ConnectionAdmission> book_;
    AdmissionClass class_ = AdmissionClass::kRefused;
    std::string client_;
  };

  explicit ConnectionAdmission(const AdmissionCaps& caps) : caps_(caps) {}
  Ticket admit(const std::string& client);
  int open() const;

 private:
  void release(AdmissionClass cls, const std::string& client);

  AdmissionCaps caps_;
  mutable std::mutex mutex_;
  int full_ = 0;
  int reserved_ = 0;
  std::map<std::string, int> per_client_;  // full connections by address
};

}  // namespace tessera
