#pragma once
// The TCP rendezvous store's wire: whole-message socket I/O with deadlines,
// the handshake that admits a peer, and the seal on every value.
//
// Handshake (before any key is read or written; all within kHandshakeMs):
//   server → client  "TSS1" server_nonce[32]
//   client → server  client_nonce[32] HMAC(secret, "client" server_nonce client_nonce)
//   server → client  'A' HMAC(secret, "server" client_nonce server_nonce), or 'R' and close
// Each side proves it holds the group's secret without sending it; a
// stranger's connection is closed before it can read or write a key, and a
// worker never takes a configuration from a leader that cannot prove it.
//
// Values are sealed by the rank that sets them: HMAC(secret, key 0 value)
// then the value, checked by the rank that gets them, so a value is only
// ever read under the key a holder of the secret wrote it for.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cpu {

constexpr int kStoreIoTimeoutMs = 10000;  // one message, once a peer has started it
constexpr int kHandshakeMs = 2000;        // a connection proves itself within this
constexpr size_t kSealBytes = 32;

bool write_all(int fd, const void* data, size_t n, int timeout_ms = kStoreIoTimeoutMs);
bool read_all(int fd, void* data, size_t n, int timeout_ms = kStoreIoTimeoutMs);

// False when the peer does not prove it holds `secret` in time.
bool server_handshake(int fd, const std::string& secret);

enum class Handshake { kAccepted, kRefused, kBroken };
// kRefused: the server says our secret is wrong, or cannot prove its own;
// kBroken: the connection closed or timed out first (a full server).
Handshake client_handshake(int fd, const std::string& secret);

std::vector<char> seal_value(const std::string& secret, const std::string& key, const std::vector<char>& value);
// False (and `value` untouched) when the seal does not match.
bool open_sealed_value(const std::string& secret, const std::string& key, const std::vector<char>& sealed,
                       std::vector<char>* value);

}  // namespace tessera::cpu
