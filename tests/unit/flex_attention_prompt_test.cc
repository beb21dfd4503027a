// Prompt tiles long enough that the score pass widens the keys in blocks of
// pages (flex_attention_passes.h: score_rows): every token of the tile gets
// the bits it gets as a decode step of its own (whose few rows read the
// keys in place), for every cache type, mask, score modifier and sink; every
// build gives the portable bits; and the result is near a dense softmax.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/attention/flex_attention.h"
#include "tests/unit/attention_step.h"

namespace tessera::cpu {
namespace {

constexpr int kDim = AttentionStep::kDim;

// SmolLM2's grouping (3 KV heads of 3 queries), 40 query tokens at the end
// of 600 keys; Gemma 3's (one KV head of 4), 24 tokens at the end of 530
// and of 300 keys, in pages of 24 that end inside groups of 16. Both pass
// several blocks of about 256 keys, the last one partly filled.
std::vector<AttentionStep> prompts(DType dtype) {
  return {AttentionStep(dtype, {600}, 9, 3, 16, 40), AttentionStep(dtype, {530, 300}, 4, 1, 24, 24)};
}

TEST(FlexAttentionPrompt, EachTokenGivesItsDecodeBits) {
  const IsaFeatures isa = detect_isa();
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    for (const AttentionStep& step : prompts(dtype)) {
      for (const AttentionParams& p : step.every_modifier()) {
        const std::vector<float> prompt = step.run(p, 2, isa);
        const size_t per_token = size_t(step.heads) * kDim;
        for (size_t t = 0; t < step.positions.size(); ++t) {
          const std::vector<float> alone = step.run_token(t, p, isa);
          ASSERT_EQ(0, std::memcmp(prompt.data() + t * per_token, alone.data(), per_token * sizeof(float)))
              << step.describe(p) << ", token " << t;
        }
      }
    }
  }
}

TEST(FlexAttentionPrompt, EveryBuildGivesThePortableBits) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    for (const AttentionStep& step : prompts(dtype)) {
      AttentionParams p;
      p.scale = 0.125f;
      const std::vector<float> portable = step.run(p, 2, IsaFeatures{});
      IsaFeatures no_avx512 = detect_isa();
      no_avx512.avx512f = false;
      for (const IsaFeatures& isa : {no_avx512, detect_isa()}) {
        const std::vector<float> out = step.run(p, 2, isa);
        EXPECT_EQ(0, std::memcmp(portable.data(), out.data(), out.size() * sizeof(float))) << dtype_name(dtype);
      }
    }
  }
}

TEST(FlexAttentionPrompt, NearADenseSoftmax) {
  for (const AttentionStep& step : prompts(DType::kF32)) {
    AttentionParams p;
    p.scale = 0.125f;
    const std::vector<float> out = step.run(p, 2, detect_isa());
    for (size_t t = 0; t < step.positions.size(); ++t) {
      const std::vector<double> want = step.dense(t, p.scale);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(out[t * want.size() + i], want[i], 2e-5) << "token " << t << " head " << i / kDim << " element " << i % kDim;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
