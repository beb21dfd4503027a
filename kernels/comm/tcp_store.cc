#include "kernels/comm/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kernels/comm/store_wire.h"

namespace tessera::cpu {

namespace {

constexpr uint32_t kMaxKey = 4096;
constexpr uint32_t kMaxValue = 1u << 20;
constexpr size_t kMaxKeys = 65536;
constexpr size_t kMaxBytes = size_t(64) << 20;
constexpr int kMaxConnections = 256;
// Connections that have not yet proved the secret: each lives at most
// kHandshakeMs, and one address may hold only a few, so a stranger
// cannot crowd out a joining rank.
constexpr int kMaxUnproven = 64;
constexpr int kMaxUnprovenPerPeer = 8;

using Clock = std::chrono::steady_clock;

bool write_u32(int fd, uint32_t v) { return write_all(fd, &v, 4); }
bool read_u32(int fd, uint32_t& v) { return read_all(fd, &v, 4); }

bool read_blob(int fd, uint32_t limit, std::string& out) {
  uint32_t n = 0;
  if (!read_u32(fd, n) || n > limit) return false;
  out.resize(n);
  return read_all(fd, out.data(), n);
}

void split_address(const std::string& address, std::string& host, std::string& port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    throw std::runtime_error("store address '" + address + "': expected HOST:PORT");
  }
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
}

addrinfo* resolve(const std::string& host, const std::string& port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0) throw std::runtime_error("store address " + host + ":" + port + ": " + gai_strerror(rc));
  return result;
}

// The peer's address without its port, for the per-peer cap.
std::string peer_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = {};
  const void* where = addr.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr)
                                                 : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&addr)->sin_addr);
  return inet_ntop(addr.ss_family, where, text, sizeof(text)) ? text : "?";
}

}  // namespace

TcpStore::TcpStore(const std::string& address, bool serve, std::chrono::milliseconds timeout, std::string secret)
    : timeout_(timeout), secret_(std::move(secret)) {
  if (secret_.empty()) throw std::runtime_error("store " + address + ": a shared secret is required (TESSERA_RENDEZVOUS_SECRET)");
  split_address(address, host_, port_);
  if (serve) {
    addrinfo* ai = resolve(host_, port_, true);
    for (addrinfo* a = ai; a && listen_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) listen_fd_ = fd;
      else close(fd);
    }
    freeaddrinfo(ai);
    if (listen_fd_ < 0) throw std::runtime_error("store: cannot listen on " + address + ": " + std::strerror(errno));
    server_ = std::thread([this] { serve_loop(); });
  }
  connect_client();
}

TcpStore::~TcpStore() {
  stopping_ = true;
  if (client_fd_ >= 0) close(client_fd_);
  if (server_.joinable()) server_.join();
  std::unique_lock<std::mutex> lock(connections_mutex_);
  connections_done_.wait(lock, [this] { return open_connections_ == 0; });
  if (listen_fd_ >= 0) close(listen_fd_);
}

void TcpStore::connect_client() {
  const auto deadline = Clock::now() + timeout_;
  while (true) {
    addrinfo* ai = resolve(host_, port_, false);
    for (addrinfo* a = ai; a && client_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) client_fd_ = fd;
      else close(fd);
    }
    freeaddrinfo(ai);
    if (client_fd_ >= 0) {
      const Handshake h = client_handshake(client_fd_, secret_);
      if (h == Handshake::kAccepted) break;
      close(client_fd_);
      client_fd_ = -1;
      if (h == Handshake::kRefused) {
        throw std::runtime_error("store at " + host_ + ":" + port_ + ": the secret does not match the leader's (TESSERA_RENDEZVOUS_SECRET)");
      }
    }
    // The leader may not be listening yet, or its unproven slots are full.
    if (Clock::now() > deadline) throw std::runtime_error("store: no leader at " + host_ + ":" + port_ + " within the timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int one = 1;
  setsockopt(client_fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void TcpStore::serve_loop() {
  while (!stopping_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string peer = peer_of(fd);
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      int& unproven_here = unproven_by_peer_[peer];
      if (open_connections_ >= kMaxConnections || unproven_ >= kMaxUnproven || unproven_here >= kMaxUnprovenPerPeer) {
        if (unproven_here == 0) unproven_by_peer_.erase(peer);
        close(fd);
        continue;
      }
      ++open_connections_;
      ++unproven_;
      ++unproven_here;
    }
    std::thread([this, fd, peer = std::move(peer)] {
      const bool proven = server_handshake(fd, secret_);
      {
        std::lock_guard<std::mutex> lock(connections_mutex_);
        --unproven_;
        if (--unproven_by_peer_[peer] == 0) unproven_by_peer_.erase(peer);
      }
      serve_connection(fd, proven);
    }).detach();
  }
}

void TcpStore::serve_connection(int fd, bool proven) {
  while (proven && !stopping_) {
    char op = 0;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, 100);
    if (ready == 0) continue;
    if (ready < 0 || !read_all(fd, &op, 1)) break;
    std::string key;
    if (!read_blob(fd, kMaxKey, key)) break;
    if (op == 'S') {
      std::string value;
      if (!read_blob(fd, kMaxValue + kSealBytes, value)) break;
      bool stored = false;
      {
        std::lock_guard<std::mutex> lock(map_mutex_);
        const auto it = map_.find(key);
        const size_t freed = it == map_.end() ? 0 : key.size() + it->second.size();
        const size_t after = map_bytes_ - freed + key.size() + value.size();
        if ((it != map_.end() || map_.size() < kMaxKeys) && after <= kMaxBytes) {
          map_[key].assign(value.begin(), value.end());
          map_bytes_ = after;
          stored = true;
        }
      }
      if (!stored || !write_all(fd, "K", 1)) break;
    } else if (op == 'G') {
      std::vector<char> value;
      bool found = false;
      {
        std::lock_guard<std::mutex> lock(map_mutex_);
        const auto it = map_.find(key);
        if (it != map_.end()) {
          value = it->second;
          found = true;
        }
      }
      const bool ok = found ? write_all(fd, "V", 1) && write_u32(fd, uint32_t(value.size())) && write_all(fd, value.data(), value.size())
                            : write_all(fd, "N", 1);
      if (!ok) break;
    } else {
      break;
    }
  }
  close(fd);
  std::lock_guard<std::mutex> lock(connections_mutex_);
  --open_connections_;
  connections_done_.notify_all();
}

void TcpStore::set(const std::string& key, const std::vector<char>& value) {
  if (key.size() > kMaxKey || value.size() > kMaxValue) throw std::runtime_error("store: key or value too large");
  const std::vector<char> data = seal_value(secret_, key, value);
  std::lock_guard<std::mutex> lock(client_mutex_);
  char reply = 0;
  const bool ok = write_all(client_fd_, "S", 1) && write_u32(client_fd_, uint32_t(key.size())) &&
                  write_all(client_fd_, key.data(), key.size()) && write_u32(client_fd_, uint32_t(data.size())) &&
                  write_all(client_fd_, data.data(), data.size()) && read_all(client_fd_, &reply, 1) && reply == 'K';
  if (!ok) throw std::runtime_error("store: setting '" + key + "' failed: the leader's store is gone or full");
}

bool TcpStore::fetch(const std::string& key, std::vector<char>* value) {
  if (key.size() > kMaxKey) throw std::runtime_error("store: key too large");
  std::lock_guard<std::mutex> lock(client_mutex_);
  char reply = 0;
  if (!write_all(client_fd_, "G", 1) || !write_u32(client_fd_, uint32_t(key.size())) ||
      !write_all(client_fd_, key.data(), key.size()) || !read_all(client_fd_, &reply, 1)) {
    throw std::runtime_error("store: the leader's store is gone");
  }
  if (reply == 'N') return false;
  uint32_t n = 0;
  if (reply != 'V' || !read_u32(client_fd_, n) || n > kMaxValue + kSealBytes) throw std::runtime_error("store: malformed reply");
  std::vector<char> sealed(n);
  if (!read_all(client_fd_, sealed.data(), n)) throw std::runtime_error("store: the leader's store is gone");
  if (!open_sealed_value(secret_, key, sealed, value)) {
    throw std::runtime_error("store: the value of '" + key + "' was not written by a holder of the group's secret");
  }
  return true;
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<char> value;
  if (!fetch(key, &value)) throw std::runtime_error("store: key '" + key + "' vanished");
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<char> ignored;
  for (const std::string& key : keys) {
    while (!fetch(key, &ignored)) {
      if (Clock::now() > deadline) throw std::runtime_error("store: timed out waiting for '" + key + "'");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace tessera::cpu
