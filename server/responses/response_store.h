#pragma once
// Responses kept for previous_response_id and GET/DELETE /v1/responses/{id}:
// in memory, for each model and API key at most `max_responses` and
// `max_bytes` (the oldest go first), each for `ttl` after it was made. A
// response is visible only to a request with the API key that made it, and
// one key's responses never push out another's. Keys are the configured
// ones, so memory is bounded by (keys + 1) x models x max_bytes.
#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/serving/request_fields.h"

namespace tessera {

struct ResponseStoreLimits {
  size_t max_responses = 1024;          // per model and API key
  size_t max_bytes = size_t(64) << 20;  // per model and API key: the conversations and answers kept
  std::chrono::seconds ttl{3600};
};

struct StoredResponse {
  std::string model;
  std::string owner;   // the API key that made it ("" without keys)
  Json conversation;   // chat messages: the input and the answer, for a follow-up
  Json response;       // the Responses object
};

class ResponseStore {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit ResponseStore(ResponseStoreLimits limits, Clock clock = std::chrono::steady_clock::now)
      : limits_(limits), clock_(std::move(clock)) {}

  void put(const std::string& id, StoredResponse stored);
  // The response, when it exists, has not expired and `owner` made it.
  std::optional<StoredResponse> get(const std::string& id, const std::string& owner);
  // True when it existed for `owner` and is now gone.
  bool remove(const std::string& id, const std::string& owner);
  size_t size();

 private:
  struct Entry {
    StoredResponse stored;
    size_t bytes = 0;
    std::chrono::steady_clock::time_point made;
  };
  // The responses of one model made with one API key.
  struct Share {
    std::list<std::string> order;  // ids, oldest first
    size_t bytes = 0;
  };
  void drop(const std::string& id);
  void evict_expired(std::chrono::steady_clock::time_point now);

  ResponseStoreLimits limits_;
  Clock clock_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  static std::string share_key(const StoredResponse& s) { return s.model + '\n' + s.owner; }
  std::unordered_map<std::string, Share> shares_;
};

}  // namespace tessera
