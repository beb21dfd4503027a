// A sequence's greedy tokens do not depend on what it is batched with or on
// how its prompt is cut into prefill chunks: every row of the batch is
// computed the same way whatever the batch holds. For a mixture-of-experts
// model, also whichever other tokens share its experts in a step.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/model_runner.h"
#include "kernels/cpu/runtime/cpu_backend.h"
#include "scheduler/page_allocator.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct Seq {
  std::vector<int32_t> tokens;   // prompt, then generated
  size_t prompt_len = 0;
  size_t done = 0;               // tokens already in the KV cache
  std::vector<int32_t> pages;
  size_t pages_sent = 0;
  bool registered = false;
};

struct SmolLM2 {
  static std::string path() { return test::model_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }
};
// Eight experts, two per token (tests/data/gguf-tiny).
struct TinyQwen3Moe {
  static std::string path() { return test::data_path("gguf-tiny/qwen3moe.gguf"); }
};

template <class Model>
class BatchInvarianceOf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(Model::path())) return;
    RunnerConfig config;
    config.kv_budget_bytes = 64ull << 20;
    runner_ = new ModelRunner(std::make_shared<cpu::CpuBackend>(cpu::CpuBackendOptions{.threads = 2, .isa = std::nullopt}),
                              Model::path(), config);
  }
  static void TearDownTestSuite() { delete runner_; }
  void SetUp() override {
    if (!runner_) GTEST_SKIP() << Model::path() << " not fetched (scripts/fetch-models.sh)";
  }

  // Runs all sequences to `new_tokens` generated tokens; each step feeds every
  // sequence at most `chunk` pending tokens.
  static void run(std::vector<Seq>& seqs, size_t chunk, size_t new_tokens) {
    PageAllocator allocator(int32_t(runner_->kv_cache().n_pages()));
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    StepPlan plan;
    for (Seq& s : seqs) plan.finished.push_back(id_of(seqs, s));  // forget the previous run's sequences
    while (true) {
      std::vector<Seq*> in_plan;
      for (Seq& s : seqs) {
        if (s.tokens.size() - s.prompt_len >= new_tokens && s.done == s.tokens.size()) continue;
        const size_t n = std::min(chunk, s.tokens.size() - s.done);
        while (s.pages.size() * size_t(runner_->page_size()) < s.done + n) s.pages.push_back(*allocator.allocate());
        if (!s.registered) {
          plan.new_sequences.push_back({id_of(seqs, s), s.tokens, uint32_t(s.prompt_len), greedy, 0});
          s.registered = true;
        }
        SequenceStep step;
        step.seq_id = id_of(seqs, s);
        step.tokens.assign(s.tokens.begin() + long(s.done), s.tokens.begin() + long(s.done + n));
        step.start_position = int32_t(s.done);
        step.pages_from = uint32_t(s.pages_sent);
        step.pages.assign(s.pages.begin() + long(s.pages_sent), s.pages.end());
        s.pages_sent = s.pages.size();
        step.sample = s.done + n == s.tokens.size() && s.tokens.size() - s.prompt_len < new_tokens;
        plan.steps.push_back(step);
        in_plan.push_back(&s);
      }
      if (plan.steps.empty()) return;
      const StepResult result = runner_->step(plan);
      for (size_t i = 0; i < in_plan.size(); ++i) {
        in_plan[i]->done += plan.steps[i].tokens.size();
        if (result.sequences[i].sampled) in_plan[i]->tokens.push_back(result.sequences[i].token.id);
      }
      plan = StepPlan{};
    }
  }

  static uint64_t id_of(const std::vector<Seq>& seqs, const Seq& s) { return uint64_t(&s - seqs.data()) + 1; }

  static Seq make(const std::string& prompt) {
    Seq s;
    s.tokens = runner_->model().tokenizer().encode(prompt, {.add_special = true});
    s.prompt_len = s.tokens.size();
    return s;
  }

  static void expect_alone_batched_and_chunked_agree();

  static ModelRunner* runner_;
};

template <class Model>
ModelRunner* BatchInvarianceOf<Model>::runner_ = nullptr;

template <class Model>
void BatchInvarianceOf<Model>::expect_alone_batched_and_chunked_agree() {
  const std::string prompt = "Write a short story about a robot who learns to paint, in three sentences.";
  std::vector<Seq> alone{make(prompt)};
  run(alone, 1 << 20, 16);
  const std::vector<int32_t> want(alone[0].tokens.begin() + long(alone[0].prompt_len), alone[0].tokens.end());
  ASSERT_EQ(want.size(), 16u);

  for (size_t chunk : {1u, 3u, 7u, 16u}) {
    std::vector<Seq> chunked{make(prompt)};
    run(chunked, chunk, 16);
    EXPECT_EQ(std::vector<int32_t>(chunked[0].tokens.begin() + long(chunked[0].prompt_len), chunked[0].tokens.end()), want)
        << "prefill chunk " << chunk;
  }

  std::vector<Seq> batch;
  const char* others[] = {"Hi", "The weather today is", "def add(a, b):", "1, 2, 3, 4, 5,", "Bonjour, je m'appelle",
                          "A long time ago in a galaxy far, far away, there was", "Q: Why is the sky blue?\nA:"};
  for (const char* o : others) batch.push_back(make(o));
  batch.insert(batch.begin() + 3, make(prompt));
  run(batch, 5, 16);
  const Seq& ours = batch[3];
  EXPECT_EQ(std::vector<int32_t>(ours.tokens.begin() + long(ours.prompt_len), ours.tokens.end()), want) << "batched with 7 others";
}

using BatchInvariance = BatchInvarianceOf<SmolLM2>;
using MoeBatchInvariance = BatchInvarianceOf<TinyQwen3Moe>;

TEST_F(BatchInvariance, AloneBatchedAndChunkedGiveTheSameTokens) { expect_alone_batched_and_chunked_agree(); }
TEST_F(MoeBatchInvariance, AloneBatchedAndChunkedGiveTheSameTokens) { expect_alone_batched_and_chunked_agree(); }

}  // namespace
}  // namespace tessera
