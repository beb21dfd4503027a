#pragma once
// A gloo rendezvous store over TCP, for ranks on several machines: rank 0
// serves a key-value map at HOST:PORT and every rank (rank 0 included) is a
// client of it. The Debian gloo has only file and Redis stores; ranks in
// separate pods share neither a file system nor a Redis server.
//
// Wire format, all integers little-endian u32:
//   request  'S' key_len key value_len value → reply 'K'
//            'G' key_len key                 → reply 'V' value_len value, or 'N' (absent)
// Keys are at most 4 KiB, values at most 1 MiB, the map at most 65,536 keys
// and 64 MiB; at most 256 connections are served at once. A peer that
// breaks these, or sends anything else, is disconnected.
//
// Every connection first proves it holds the group's secret, and every
// value is sealed by its writer (kernels/comm/store_wire.h): a stranger who
// reaches the port can neither read nor write a key, and holds at most a
// few connections, each for at most two seconds.
#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::cpu {

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // `address` is HOST:PORT; `serve`: this process listens there (rank 0);
  // `secret`: the group's shared secret (not empty).
  TcpStore(const std::string& address, bool serve, std::chrono::milliseconds timeout, std::string secret);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  void serve_loop();
  // Serves a connection that proved the secret; closes one that did not.
  void serve_connection(int fd, bool proven);
  // Returns false when the key is absent.
  bool fetch(const std::string& key, std::vector<char>* value);
  void connect_client();

  std::string host_;
  std::string port_;
  std::chrono::milliseconds timeout_;
  std::string secret_;
  int listen_fd_ = -1;
  int client_fd_ = -1;
  std::mutex client_mutex_;
  std::atomic<bool> stopping_{false};
  std::thread server_;
  // Connection threads are detached; the destructor waits for them to end.
  std::mutex connections_mutex_;
  std::condition_variable connections_done_;
  int open_connections_ = 0;
  int unproven_ = 0;                             // connections still in their handshake
  std::map<std::string, int> unproven_by_peer_;  // the same, by peer address
  std::mutex map_mutex_;
  std::map<std::string, std::vector<char>> map_;
  size_t map_bytes_ = 0;  // keys and values held
};

}  // namespace tessera::cpu
