#pragma once
// Where the ranks of parallel groups meet: a key-value store every rank
// reaches. One store can serve several groups (each under its own key
// prefix) and carry what the leader tells its workers before any group
// exists, such as the configuration they load.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  // Waits for the key up to `timeout`; throws CollectiveError past it.
  virtual std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
};

// "tcp:HOST:PORT": the store rank 0 serves at that address (`serve`: this
// process is rank 0 and listens there; otherwise connects, retrying until
// `timeout`), open only to peers that hold `secret` (required for tcp).
// "file:DIR": a directory every rank can reach (its permissions guard it).
std::shared_ptr<RendezvousStore> open_rendezvous_store(const std::string& address, bool serve,
                                                       std::chrono::milliseconds timeout, const std::string& secret = {});

// The environment variable that carries a group's secret to its ranks.
inline constexpr const char* kRendezvousSecretEnv = "TESSERA_RENDEZVOUS_SECRET";

}  // namespace tessera
