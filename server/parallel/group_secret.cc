#include "server/parallel/group_secret.h"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "engine/core/error.h"
#include "kernels/comm/rendezvous_store.h"

namespace tessera {
namespace {

constexpr size_t kMaxSecretBytes = 4096;

}  // namespace

std::string generate_group_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) throw Error("cannot draw random bytes for the rendezvous secret");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string read_group_secret(const std::string& secret_file) {
  if (const char* env = std::getenv(kRendezvousSecretEnv); env && *env) return env;
  if (secret_file.empty()) return {};
  struct stat st{};
  if (stat(secret_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Error("rendezvous secret file '" + secret_file + "': not a readable regular file");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    spdlog::warn("rendezvous secret file '{}' can be read by other users; chmod 600 it", secret_file);
  }
  std::ifstream in(secret_file);
  if (!in) throw Error("rendezvous secret file '" + secret_file + "': cannot be read");
  std::string head(kMaxSecretBytes + 1, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  std::string secret = head.substr(0, head.find('\n'));
  if (secret.size() > kMaxSecretBytes) throw Error("rendezvous secret file '" + secret_file + "': the first line is over 4 KiB");
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ' || secret.back() == '\t')) secret.pop_back();
  if (secret.empty()) throw Error("rendezvous secret file '" + secret_file + "': the first line is empty");
  return secret;
}

std::string leader_group_secret(const ParallelConfig& parallel) {
  std::string secret = read_group_secret(parallel.secret_file);
  if (!secret.empty()) return secret;
  if (parallel.spawn_workers) return generate_group_secret();
  throw Error(std::string("parallel ranks on other machines need a shared secret: set ") + kRendezvousSecretEnv +
              " or parallel.secret_file on the leader and every worker");
}

}  // namespace tessera
