// Decode steps whose keys are split among threads (flex_attention_split.h)
// against the same step run whole by one thread: the same bits for every
// thread count, cache type, mask, score modifier and sink, on every kernel
// build; and near a plain dense softmax.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention/flex_attention.h"
#include "tests/unit/attention_step.h"

namespace tessera::cpu {
namespace {

constexpr int kDim = AttentionStep::kDim;
using DecodeStep = AttentionStep;  // one query token a sequence

// Every thread count above the step's number of query heads cuts the keys
// differently (two parts a thread); fewer threads split the heads, and a
// pool of one runs items whole.
void expect_split_matches_whole(const DecodeStep& step, const AttentionParams& p, const IsaFeatures& isa) {
  size_t chunks = 0;
  const std::vector<float> whole = step.run(p, 1, isa, &chunks);
  ASSERT_EQ(chunks, 0u) << "one thread runs each item whole";
  for (int threads : {2, 5, 12, 16}) {
    const std::vector<float> split = step.run(p, threads, isa, &chunks);
    // With fewer query heads than threads, more chunks than items: the keys were split.
    const size_t items = size_t(step.kv_heads) * step.kv_len.size();
    const std::string why = step.describe(p) + ", " + std::to_string(threads) + " threads";
    if (step.heads * step.kv_len.size() < size_t(threads)) ASSERT_GT(chunks, items) << why;
    else ASSERT_EQ(chunks, 0u) << why;
    ASSERT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float))) << why;
  }
}

TEST(FlexAttentionSplit, EveryThreadCountGivesTheWholeItemsBits) {
  // SmolLM2's grouping (3 KV heads of 3 queries) at 700 keys and Gemma 3's
  // (one KV head of 4) at 1,000 and 300; pages of 24 keys end inside groups of 16.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    for (const DecodeStep& step : {DecodeStep(dtype, {700}, 9, 3, 16), DecodeStep(dtype, {1000, 300}, 4, 1, 24)}) {
      for (const AttentionParams& p : step.every_modifier()) expect_split_matches_whole(step, p, detect_isa());
    }
  }
}

// The split runs in every build; each gives the portable build's bits.
TEST(FlexAttentionSplit, EveryBuildGivesThePortableBits) {
  for (DType dtype : {DType::kF32, DType::kF16}) {
    const DecodeStep step(dtype, {900}, 14, 2, 16);
    AttentionParams p;
    p.scale = 0.125f;
    const std::vector<float> portable = step.run(p, 1, IsaFeatures{});
    IsaFeatures no_avx512 = detect_isa();
    no_avx512.avx512f = false;
    for (const IsaFeatures& isa : {IsaFeatures{}, no_avx512, detect_isa()}) {
      size_t chunks = 0;
      const std::vector<float> split = step.run(p, 16, isa, &chunks);
      EXPECT_GT(chunks, 2u);
      EXPECT_EQ(0, std::memcmp(portable.data(), split.data(), split.size() * sizeof(float))) << dtype_name(dtype);
    }
  }
}

// The split's result is attention: a dense softmax in double over the same
// f32 cache agrees to rounding.
TEST(FlexAttentionSplit, NearADenseSoftmax) {
  const DecodeStep step(DType::kF32, {640}, 4, 2, 16);
  AttentionParams p;
  p.scale = 0.125f;
  size_t chunks = 0;
  const std::vector<float> out = step.run(p, 8, detect_isa(), &chunks);
  ASSERT_GT(chunks, 2u);
  const std::vector<double> want = step.dense(0, p.scale);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-5) << "head " << i / kDim << " element " << i % kDim;
}

}  // namespace
}  // namespace tessera::cpu
