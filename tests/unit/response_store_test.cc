// The Responses store: caps on count and bytes per model and API key (oldest
// first), the time to live, and owners who see only their own responses.
#include "server/responses/response_store.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  ResponseStore::Clock function() {
    return [this] { return now; };
  }
};

StoredResponse stored(const std::string& model, const std::string& owner, size_t text_bytes = 10) {
  return {model, owner, Json::array({{{"role", "user"}, {"content", std::string(text_bytes, 'x')}}}), Json::object()};
}

TEST(ResponseStore, KeepsAtMostMaxResponsesPerModelOldestFirst) {
  ResponseStore store({.max_responses = 2, .max_bytes = 1 << 20, .ttl = std::chrono::seconds(60)});
  store.put("a", stored("m", ""));
  store.put("b", stored("m", ""));
  store.put("x", stored("other", ""));
  store.put("c", stored("m", ""));
  EXPECT_FALSE(store.get("a", "").has_value());
  EXPECT_TRUE(store.get("b", "").has_value());
  EXPECT_TRUE(store.get("c", "").has_value());
  EXPECT_TRUE(store.get("x", "").has_value()) << "another model's share is its own";
  EXPECT_EQ(store.size(), 3u);
}

TEST(ResponseStore, KeepsAtMostMaxBytesPerModel) {
  ResponseStore store({.max_responses = 100, .max_bytes = 200, .ttl = std::chrono::seconds(60)});  // one entry is about 130 bytes
  store.put("a", stored("m", "", 100));
  store.put("b", stored("m", "", 100));
  EXPECT_FALSE(store.get("a", "").has_value());
  EXPECT_TRUE(store.get("b", "").has_value());
  store.put("huge", stored("m", "", 1000));  // more than the whole share: never kept
  EXPECT_FALSE(store.get("huge", "").has_value());
  EXPECT_TRUE(store.get("b", "").has_value());
}

TEST(ResponseStore, ForgetsResponsesAfterTheirTimeToLive) {
  FakeClock clock;
  ResponseStore store({.max_responses = 10, .max_bytes = 1 << 20, .ttl = std::chrono::seconds(60)}, clock.function());
  store.put("a", stored("m", ""));
  clock.now += std::chrono::seconds(30);
  store.put("b", stored("m", ""));
  clock.now += std::chrono::seconds(31);
  EXPECT_FALSE(store.get("a", "").has_value());
  EXPECT_TRUE(store.get("b", "").has_value());
  clock.now += std::chrono::seconds(30);
  EXPECT_FALSE(store.get("b", "").has_value());
  EXPECT_EQ(store.size(), 0u);
}

TEST(ResponseStore, OneKeyFillingItsShareLeavesOtherKeysResponses) {
  ResponseStore store({.max_responses = 2, .max_bytes = 1 << 20, .ttl = std::chrono::seconds(60)});
  store.put("theirs", stored("m", "key-1"));
  for (int i = 0; i < 10; ++i) store.put("mine" + std::to_string(i), stored("m", "key-2"));
  EXPECT_TRUE(store.get("theirs", "key-1").has_value());
  EXPECT_TRUE(store.get("mine9", "key-2").has_value());
  EXPECT_FALSE(store.get("mine7", "key-2").has_value());
}

TEST(ResponseStore, OnlyItsOwnerSeesOrDeletesAResponse) {
  ResponseStore store({});
  store.put("a", stored("m", "key-1"));
  EXPECT_FALSE(store.get("a", "key-2").has_value());
  EXPECT_FALSE(store.remove("a", "key-2"));
  EXPECT_TRUE(store.get("a", "key-1").has_value());
  EXPECT_TRUE(store.remove("a", "key-1"));
  EXPECT_FALSE(store.get("a", "key-1").has_value());
  EXPECT_FALSE(store.remove("a", "key-1"));
}

}  // namespace
}  // namespace tessera
