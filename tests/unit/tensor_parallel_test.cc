// Two tensor-parallel ranks (threads of this process, one CPU thread each,
// meeting through gloo) against one rank, on every fetched real model:
// prompt logits within 1e-3, greedy tokens the same, and a sequence's
// tokens the same whatever it is batched with; each rank holds its half of
// the vocabulary's embeddings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "engine/runtime/model_runner.h"
#include "tests/unit/parallel_pair.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

using test::Generation;
using test::generate;

RunnerConfig config_for(int rank, int world, TensorParallelLayout layout = TensorParallelLayout::kExact) {
  RunnerConfig config;
  config.kv_budget_bytes = 96ull << 20;
  config.capacity = {1024, 16};
  config.load.tensor_rank = {rank, world, layout};
  return config;
}

// The exact layout must give one rank's logits and tokens; the all-reduce
// layout's split sums drift (reported), but its first token must agree.
void compare_with_one_rank(const std::string& file, TensorParallelLayout layout = TensorParallelLayout::kExact,
                           const std::string& dir = test::model_dir()) {
  const std::string path = dir + "/" + file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << file << " not fetched (scripts/fetch-models.sh)";
  std::vector<std::vector<int32_t>> prompts;
  Generation one;
  {
    ModelRunner single(test::one_cpu_thread(), path, config_for(0, 1));
    for (const std::string& p : test::short_prompts()) prompts.push_back(single.model().tokenizer().encode(p, {.add_special = true}));
    one = generate(single, prompts, 32, 1);
  }
  test::ParallelPair pair(path, [&](int rank) { return config_for(rank, 2, layout); });
  // Rank 0 keeps the first half of the embedding rows, as of the output head.
  const Model& model = pair.runner().model();
  EXPECT_EQ(model.weights().token_embedding.first_id, 0);
  EXPECT_EQ(model.weights().token_embedding.rows * 2, model.spec().vocab_size);
  const Generation two = pair.generate(prompts, 32, 1);
  // Alone, a sequence gets the same tokens as in the batch of ten.
  const Generation alone = pair.generate({prompts[3]}, 32, 100);
  EXPECT_EQ(alone.tokens[0], two.tokens[3]);
  ASSERT_TRUE(pair.follower_error().empty()) << pair.follower_error();

  int same = 0, same_first = 0;
  float worst = 0.0f;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(one.prompt_logits[i].size(), two.prompt_logits[i].size());
    for (size_t j = 0; j < one.prompt_logits[i].size(); ++j) {
      worst = std::max(worst, std::fabs(one.prompt_logits[i][j] - two.prompt_logits[i][j]));
    }
    same += one.tokens[i] == two.tokens[i];
    same_first += one.tokens[i][0] == two.tokens[i][0];
  }
  std::printf("%s (%s layout): max |logit difference| %.2e, %d/10 greedy outputs of 32 tokens identical\n", file.c_str(),
              layout == TensorParallelLayout::kExact ? "exact" : "all-reduce", double(worst), same);
  if (layout == TensorParallelLayout::kExact) {
    EXPECT_LT(worst, 1e-3f);
    EXPECT_GE(same, 9);
  } else {
    EXPECT_EQ(same_first, 10);
  }
}

TEST(TensorParallel, SmolLM2MatchesOneRank) { compare_with_one_rank("SmolLM2-135M-Instruct.Q4_1.gguf"); }
TEST(TensorParallel, Gemma3MatchesOneRank) { compare_with_one_rank("gemma-3-270m-q4_k_m.gguf"); }
TEST(TensorParallel, Qwen25CoderMatchesOneRank) { compare_with_one_rank("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"); }
TEST(TensorParallel, AllReduceLayoutStaysClose) {
  compare_with_one_rank("SmolLM2-135M-Instruct.Q4_1.gguf", TensorParallelLayout::kAllReduce);
}
// Mixture of experts: each expert split across the ranks, as a dense FFN
// (Mixtral's 128 channels per expert in whole gathers of 32: 64 and 64;
// Qwen3-MoE's 32 in f32 columns: 16 and 16).
TEST(TensorParallel, TinyMixtralMatchesOneRank) {
  compare_with_one_rank("mixtral.gguf", TensorParallelLayout::kExact, test::data_path("gguf-tiny"));
}
TEST(TensorParallel, TinyQwen3MoeAllReduceLayoutStaysClose) {
  compare_with_one_rank("qwen3moe.gguf", TensorParallelLayout::kAllReduce, test::data_path("gguf-tiny"));
}
// Qwen2-MoE's shared expert is whole on both ranks, added after the
// experts' reduced sum (its experts' 32 channels split as Qwen3-MoE's).
TEST(TensorParallel, TinyQwen2MoeAllReduceLayoutStaysClose) {
  compare_with_one_rank("qwen2moe.gguf", TensorParallelLayout::kAllReduce, test::data_path("gguf-tiny"));
}

TEST(TensorShardPlan, SplitsHeadsFfnAndVocabulary) {
  DecoderSpec spec;
  spec.n_heads = 9;
  spec.n_kv_heads = 3;
  spec.ffn_dim = 1536;
  spec.vocab_size = 49152;
  spec.head_dim = 64;
  spec.d_model = 576;
  const auto exact = TensorParallelLayout::kExact, all_reduce = TensorParallelLayout::kAllReduce;
  const TensorShard a = plan_tensor_shard(spec, 0, 2, exact, 1, "m"), b = plan_tensor_shard(spec, 1, 2, exact, 1, "m");
  // Query heads 0-4 and 5-8: KV head 1 serves both ranks.
  EXPECT_EQ(a.kv_heads, 2);
  EXPECT_EQ(a.count(a.q), 5 * 64);
  EXPECT_EQ(a.query_head_offset(64), 0);
  EXPECT_EQ(b.kv_head_first, 1);
  EXPECT_EQ(b.kv_heads, 2);
  EXPECT_EQ(b.first(b.q), 5 * 64);
  EXPECT_EQ(b.count(b.q), 4 * 64);
  EXPECT_EQ(b.query_group, 3);
  EXPECT_EQ(b.query_head_offset(64), 2);
  EXPECT_EQ(a.count(a.ffn), 768);
  EXPECT_EQ(b.first(b.model), 288);
  EXPECT_EQ(b.first(b.vocab), 24576);
  // One KV head kept by both ranks, its four query heads split.
  spec.n_heads = 4;
  spec.n_kv_heads = 1;
  const TensorShard c = plan_tensor_shard(spec, 1, 2, all_reduce, 256, "m");
  EXPECT_EQ(c.kv_head_first, 0);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.first(c.q), 2 * 64);
  EXPECT_EQ(c.count(c.q), 2 * 64);
  // 19 blocks of 256 FFN channels: 10 and 9 for the all-reduce layout.
  spec.ffn_dim = 4864;
  const TensorShard blocks = plan_tensor_shard(spec, 0, 2, all_reduce, 256, "m"), even = plan_tensor_shard(spec, 0, 2, exact, 256, "m");
  EXPECT_EQ(blocks.count(blocks.ffn), 2560);
  EXPECT_EQ(even.count(even.ffn), 2432);
  // Four query heads over two KV heads on three ranks: 2, 1 and 1 heads,
  // the last two ranks both keeping KV head 1.
  spec.n_kv_heads = 2;
  const TensorShard third = plan_tensor_shard(spec, 2, 3, exact, 1, "m");
  EXPECT_EQ(third.kv_head_first, 1);
  EXPECT_EQ(third.kv_heads, 1);
  EXPECT_EQ(third.query_head_offset(64), 1);
  EXPECT_THROW(plan_tensor_shard(spec, 0, 5, exact, 1, "m"), Error);  // four query heads, five ranks
  EXPECT_THROW(plan_tensor_shard(spec, 2, 2, exact, 1, "m"), Error);
}

}  // namespace
}  // namespace tessera
