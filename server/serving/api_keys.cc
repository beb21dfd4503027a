#include "server/serving/api_keys.h"

#include <cctype>
#include <cstdint>

namespace tessera {
namespace {

bool same_secret(std::string_view given, std::string_view key) {
  // Every byte of the key is compared whatever the input, so the time taken
  // does not reveal how long a matching prefix was.
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) diff |= uint8_t(key[i] ^ (i < given.size() ? given[i] : 0));
  return diff == 0;
}

}  // namespace

bool api_key_accepted(std::string_view authorization, const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(uint8_t(authorization[i])) != std::tolower(uint8_t(kScheme[i]))) return false;
  }
  const std::string_view token = authorization.substr(kScheme.size());
  bool accepted = false;
  for (const std::string& key : keys) accepted |= same_secret(token, key);
  return accepted;
}

}  // namespace tessera
