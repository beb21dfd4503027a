#include "kernels/comm/store_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstring>

namespace tessera::cpu {
namespace {

using Digest = std::array<unsigned char, 32>;
constexpr char kMagic[4] = {'T', 'S', 'S', '1'};

// HMAC-SHA256 of the concatenated parts.
Digest mac(const std::string& secret, std::initializer_list<std::pair<const void*, size_t>> parts) {
  std::vector<unsigned char> message;
  for (const auto& [data, n] : parts) {
    const auto* p = static_cast<const unsigned char*>(data);
    message.insert(message.end(), p, p + n);
  }
  Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), int(secret.size()), message.data(), message.size(), out.data(), &len);
  return out;
}

bool same(const void* a, const void* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return left > 0 ? int(left) : 0;
}

}  // namespace

bool write_all(int fd, const void* data, size_t n, int timeout_ms) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return false;
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return false;
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

bool server_handshake(int fd, const std::string& secret) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHandshakeMs);
  Digest server_nonce{}, client_nonce{}, client_proof{};
  if (RAND_bytes(server_nonce.data(), int(server_nonce.size())) != 1) return false;
  if (!write_all(fd, kMagic, sizeof(kMagic), remaining_ms(deadline)) ||
      !write_all(fd, server_nonce.data(), server_nonce.size(), remaining_ms(deadline)) ||
      !read_all(fd, client_nonce.data(), client_nonce.size(), remaining_ms(deadline)) ||
      !read_all(fd, client_proof.data(), client_proof.size(), remaining_ms(deadline))) {
    return false;
  }
  const Digest expected = mac(secret, {{"client", 6}, {server_nonce.data(), 32}, {client_nonce.data(), 32}});
  if (!same(expected.data(), client_proof.data(), expected.size())) {
    write_all(fd, "R", 1, remaining_ms(deadline));
    return false;
  }
  const Digest proof = mac(secret, {{"server", 6}, {client_nonce.data(), 32}, {server_nonce.data(), 32}});
  return write_all(fd, "A", 1, remaining_ms(deadline)) && write_all(fd, proof.data(), proof.size(), remaining_ms(deadline));
}

Handshake client_handshake(int fd, const std::string& secret) {
  char magic[sizeof(kMagic)];
  Digest server_nonce{}, client_nonce{}, server_proof{};
  if (!read_all(fd, magic, sizeof(magic), kHandshakeMs)) return Handshake::kBroken;
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) return Handshake::kRefused;  // not a Tessera store
  if (!read_all(fd, server_nonce.data(), server_nonce.size(), kHandshakeMs)) return Handshake::kBroken;
  if (RAND_bytes(client_nonce.data(), int(client_nonce.size())) != 1) return Handshake::kBroken;
  const Digest proof = mac(secret, {{"client", 6}, {server_nonce.data(), 32}, {client_nonce.data(), 32}});
  char verdict = 0;
  if (!write_all(fd, client_nonce.data(), client_nonce.size(), kHandshakeMs) ||
      !write_all(fd, proof.data(), proof.size(), kHandshakeMs) || !read_all(fd, &verdict, 1, kHandshakeMs)) {
    return Handshake::kBroken;
  }
  if (verdict != 'A') return Handshake::kRefused;
  if (!read_all(fd, server_proof.data(), server_proof.size(), kHandshakeMs)) return Handshake::kBroken;
  const Digest expected = mac(secret, {{"server", 6}, {client_nonce.data(), 32}, {server_nonce.data(), 32}});
  return same(expected.data(), server_proof.data(), expected.size()) ? Handshake::kAccepted : Handshake::kRefused;
}

std::vector<char> seal_value(const std::string& secret, const std::string& key, const std::vector<char>& value) {
  const Digest seal = mac(secret, {{key.data(), key.size()}, {"", 1}, {value.data(), value.size()}});
  std::vector<char> out(seal.begin(), seal.end());
  out.insert(out.end(), value.begin(), value.end());
  return out;
}

bool open_sealed_value(const std::string& secret, const std::string& key, const std::vector<char>& sealed,
                       std::vector<char>* value) {
  if (sealed.size() < kSealBytes) return false;
  const char* body = sealed.data() + kSealBytes;
  const size_t body_bytes = sealed.size() - kSealBytes;
  const Digest expected = mac(secret, {{key.data(), key.size()}, {"", 1}, {body, body_bytes}});
  if (!same(expected.data(), sealed.data(), kSealBytes)) return false;
  value->assign(body, body + body_bytes);
  return true;
}

}  // namespace tessera::cpu
