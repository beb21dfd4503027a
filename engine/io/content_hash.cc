#include "engine/io/content_hash.h"

#include <openssl/evp.h>

#include "engine/core/error.h"

namespace tessera {

struct ContentHash::State {
  EVP_MD_CTX* ctx = nullptr;
};

ContentHash::ContentHash() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1) throw Error("SHA-256 is not available");
}

ContentHash::~ContentHash() { EVP_MD_CTX_free(state_->ctx); }

ContentHash& ContentHash::add(const void* data, size_t bytes) {
  const uint64_t length = bytes;
  EVP_DigestUpdate(state_->ctx, &length, sizeof(length));
  EVP_DigestUpdate(state_->ctx, data, bytes);
  return *this;
}

std::string ContentHash::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &n);
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 15];
  }
  return out;
}

std::string sha256_raw(const void* data, size_t bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data, bytes, digest, &n, EVP_sha256(), nullptr) != 1) throw Error("SHA-256 failed");
  return std::string(reinterpret_cast<const char*>(digest), n);
}

}  // namespace tessera
