// The serving loop on the real engine: concurrent submissions, streaming,
// cancellation, refusal, drain. Every accepted request ends with exactly one
// final event.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "kernels/cpu/runtime/cpu_backend.h"
#include "scheduler/model_loop.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

using namespace std::chrono_literals;

struct Collected {
  std::vector<int32_t> tokens;
  int finals = 0;
  FinishReason finish = FinishReason::kNone;
  std::string error;
};

Collected collect(RequestStream& stream) {
  Collected c;
  while (auto e = stream.pop(60s)) {
    if (e->has_token) c.tokens.push_back(e->token.id);
    if (e->finish != FinishReason::kNone) {
      ++c.finals;
      c.finish = e->finish;
      c.error = e->error;
      break;
    }
  }
  return c;
}

class ModelLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 not fetched (scripts/fetch-models.sh)";
    RunnerConfig config;
    config.kv_budget_bytes = 32ull << 20;
    SchedulerLimits limits;
    limits.max_model_len = 512;
    limits.max_queued_requests = 3;
    loop_ = std::make_unique<ModelLoop>(std::make_unique<ModelRunner>(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}), path, config), limits);
  }

  Request request(const std::string& prompt, int max_new) {
    Request r;
    r.prompt = loop_->runner().model().tokenizer().encode(prompt, {.add_special = true});
    r.sampling.temperature = 0.0f;
    r.max_new_tokens = max_new;
    return r;
  }

  std::unique_ptr<ModelLoop> loop_;
};

TEST_F(ModelLoopTest, ConcurrentRequestsStreamTheirOwnGreedyTokens) {
  const Submission alone = loop_->submit(request("The capital of France is", 12));
  ASSERT_EQ(alone.admission, Admission::kAccepted);
  const Collected want = collect(*alone.stream);
  ASSERT_EQ(want.tokens.size(), 12u);

  std::vector<Collected> got(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      const Submission s = loop_->submit(request(i == 1 ? "The capital of France is" : "def add(a, b):", 12));
      ASSERT_EQ(s.admission, Admission::kAccepted);
      got[size_t(i)] = collect(*s.stream);
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(got[1].tokens, want.tokens);
  EXPECT_EQ(got[0].tokens, got[2].tokens);
  for (const Collected& c : got) {
    EXPECT_EQ(c.finals, 1);
    EXPECT_EQ(c.finish, FinishReason::kLength);
  }
}

TEST_F(ModelLoopTest, CancelEndsTheStreamAndFreesPages) {
  const int total = loop_->stats().total_pages;
  const Submission s = loop_->submit(request("Tell me a very long story about dragons.", 400));
  ASSERT_EQ(s.admission, Admission::kAccepted);
  ASSERT_TRUE(s.stream->pop(60s).has_value());  // the first token arrived
  loop_->cancel(s.request_id);
  const Collected rest = collect(*s.stream);
  EXPECT_EQ(rest.finals, 1);
  EXPECT_EQ(rest.finish, FinishReason::kCancelled);
  EXPECT_EQ(loop_->stats().free_pages, total);
}

TEST_F(ModelLoopTest, AnOutOfVocabularyTokenIsRefusedAndTheLoopStaysReady) {
  const int vocab = loop_->runner().model().spec().vocab_size;
  Request bad = request("hi", 4);
  bad.prompt.push_back(vocab);
  const Submission refused = loop_->submit(bad);
  EXPECT_EQ(refused.admission, Admission::kInvalid);
  EXPECT_NE(refused.reason.find(std::to_string(vocab)), std::string::npos);
  Request biased = request("hi", 4);
  biased.sampling.logit_bias = {{-1, 1.0f}};
  EXPECT_EQ(loop_->submit(biased).admission, Admission::kInvalid);
  const Submission good = loop_->submit(request("Once upon a time", 4));
  ASSERT_EQ(good.admission, Admission::kAccepted);
  EXPECT_EQ(collect(*good.stream).finish, FinishReason::kLength);
  EXPECT_EQ(loop_->state(), LoopState::kReady);
}

TEST_F(ModelLoopTest, TooLongIsRefusedAndDrainFinishesInFlightWork) {
  EXPECT_EQ(loop_->submit(request("hi", 600)).admission, Admission::kTooLong);
  const Submission s = loop_->submit(request("Once upon a time", 8));
  ASSERT_EQ(s.admission, Admission::kAccepted);
  loop_->drain(30s);
  const Collected c = collect(*s.stream);
  EXPECT_EQ(c.tokens.size(), 8u);
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ(loop_->state(), LoopState::kStopped);
  EXPECT_EQ(loop_->submit(request("hi", 2)).admission, Admission::kQueueFull);
}

TEST_F(ModelLoopTest, DrainTimeoutEndsTheRestWithAnError) {
  const Submission s = loop_->submit(request("Write an essay about the ocean.", 450));
  ASSERT_EQ(s.admission, Admission::kAccepted);
  loop_->drain(50ms);
  const Collected c = collect(*s.stream);
  EXPECT_EQ(c.finals, 1);
  EXPECT_EQ(c.finish, FinishReason::kError);
}

TEST_F(ModelLoopTest, OverlappingDrainsEndEachRequestOnceWithOneOfTheirReasons) {
  // A reload's drain of a model and the daemon's own drain may overlap.
  const Submission s = loop_->submit(request("Write an essay about the ocean.", 450));
  ASSERT_EQ(s.admission, Admission::kAccepted);
  std::thread reload([this] { loop_->drain(50ms, "model 'm' was unloaded by a config reload"); });
  std::thread shutdown([this] { loop_->drain(50ms); });
  reload.join();
  shutdown.join();
  const Collected c = collect(*s.stream);
  EXPECT_EQ(c.finals, 1);
  EXPECT_EQ(c.finish, FinishReason::kError);
  EXPECT_TRUE(c.error == "model 'm' was unloaded by a config reload" || c.error == "the server is shutting down") << c.error;
  EXPECT_EQ(loop_->state(), LoopState::kStopped);
}

}  // namespace
}  // namespace tessera
