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

#include "engine/tensor/half.h"
#include "kernels/cpu/attention/flex_attention.h"

namespace tessera::cpu {
namespace {

constexpr int kDim = 64;

// Decode steps of `kv_lens.size()` sequences, each one query token at the
// end of its context, over a shuffled page pool with float, f16 or int8
// contents (int8 rows with random scales, keys centred on zero).
struct DecodeStep {
  DType dtype;
  int heads, kv_heads, page;
  std::vector<int32_t> kv_len, query_start, positions, page_indptr, page_indices, prefix_len;
  std::vector<float> k32, v32, q, k_scales, v_scales, k_center, sinks;
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;

  DecodeStep(DType type, std::vector<int32_t> lens, int n_heads, int n_kv_heads, int page_size)
      : dtype(type), heads(n_heads), kv_heads(n_kv_heads), page(page_size), kv_len(std::move(lens)) {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    query_start = {0}, page_indptr = {0};
    for (int32_t len : kv_len) {
      positions.push_back(len - 1);
      query_start.push_back(query_start.back() + 1);
      page_indptr.push_back(page_indptr.back() + (len + page - 1) / page);
      prefix_len.push_back(len / 3);
    }
    page_indices.resize(size_t(page_indptr.back()));
    std::iota(page_indices.begin(), page_indices.end(), 0);
    std::shuffle(page_indices.begin(), page_indices.end(), rng);
    const size_t slots = size_t(page_indptr.back()) * size_t(page), elems = slots * size_t(kv_heads) * kDim;
    k32.resize(elems), v32.resize(elems);
    for (float& x : k32) x = dist(rng);
    for (float& x : v32) x = dist(rng);
    for (float x : k32) k16.push_back(f32_to_f16(x));
    for (float x : v32) v16.push_back(f32_to_f16(x));
    for (float x : k32) k8.push_back(int8_t(std::lround(std::clamp(x * 40.0f, -127.0f, 127.0f))));
    for (float x : v32) v8.push_back(int8_t(std::lround(std::clamp(x * 40.0f, -127.0f, 127.0f))));
    std::uniform_real_distribution<float> scale(0.01f, 0.04f);
    for (size_t i = 0; i < slots * size_t(kv_heads); ++i) k_scales.push_back(scale(rng)), v_scales.push_back(scale(rng));
    k_center.assign(size_t(kv_heads) * kDim, 0.0f);
    q.resize(kv_len.size() * size_t(heads) * kDim);
    for (float& x : q) x = dist(rng);
    for (int h = 0; h < heads; ++h) sinks.push_back(dist(rng));
  }
  PagedKv kv() const {
    if (dtype == DType::kF16) return {k16.data(), v16.data(), dtype, page, kv_heads, kDim};
    if (dtype == DType::kI8) return {k8.data(), v8.data(), dtype, page, kv_heads, kDim, k_scales.data(), v_scales.data(), k_center.data()};
    return {k32.data(), v32.data(), dtype, page, kv_heads, kDim};
  }
  AttentionBatch batch() const {
    return {int(kv_len.size()), query_start.data(), positions.data(), kv_len.data(), page_indptr.data(), page_indices.data(),
            prefix_len.data()};
  }
  // The step's outputs; *chunks: how many key chunks the split cut (0: run whole).
  std::vector<float> run(const AttentionParams& p, int threads, const IsaFeatures& isa, size_t* chunks = nullptr) const {
    ThreadPool pool(threads);
    std::vector<AttentionWorkItem> items;
    plan_attention_items(batch(), kv_heads, items);
    AttentionWorkspace workspace(pool.size());
    std::vector<float> out(q.size(), NAN);
    run_attention_items(items, q.data(), heads, kv(), batch(), p, out.data(), pool, isa, workspace);
    if (chunks) *chunks = workspace.split.chunks.size();
    return out;
  }
};

std::string what(DType dtype, const AttentionParams& p, int threads) {
  return std::string(dtype_name(dtype)) + " mask " + std::to_string(int(p.mask)) + " score " + std::to_string(int(p.score)) +
         (p.sinks ? " sinks" : "") + ", " + std::to_string(threads) + " threads";
}

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
    if (step.heads * step.kv_len.size() < size_t(threads)) ASSERT_GT(chunks, items) << what(step.dtype, p, threads);
    else ASSERT_EQ(chunks, 0u) << what(step.dtype, p, threads);
    ASSERT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float))) << what(step.dtype, p, threads);
  }
}

TEST(FlexAttentionSplit, EveryThreadCountGivesTheWholeItemsBits) {
  // SmolLM2's grouping (3 KV heads of 3 queries) at 700 keys and Gemma 3's
  // (one KV head of 4) at 1,000 and 300; pages of 24 keys end inside groups of 16.
  const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f, 0.03f, 0.02f, 0.01f, 0.005f, 0.002f};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    for (const DecodeStep& step : {DecodeStep(dtype, {700}, 9, 3, 16), DecodeStep(dtype, {1000, 300}, 4, 1, 24)}) {
      for (MaskMod mask : {MaskMod::kCausal, MaskMod::kSlidingWindow, MaskMod::kPrefixLm}) {
        for (ScoreMod score : {ScoreMod::kNone, ScoreMod::kSoftcap, ScoreMod::kAlibi}) {
          AttentionParams p;
          p.mask = mask;
          p.score = score;
          p.scale = 0.125f;
          p.window = 517;  // the window's first key lies inside a group
          p.softcap = 2.0f;
          p.alibi_slopes = slopes.data();
          expect_split_matches_whole(step, p, detect_isa());
        }
      }
      AttentionParams sinks;
      sinks.scale = 0.125f;
      sinks.sinks = step.sinks.data();
      expect_split_matches_whole(step, sinks, detect_isa());
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
  const int len = step.kv_len[0];
  for (int h = 0; h < step.heads; ++h) {
    const int g = h / (step.heads / step.kv_heads);
    auto row = [&](const std::vector<float>& pool, int k) {
      const int slot = step.page_indices[size_t(k / step.page)] * step.page + k % step.page;
      return pool.data() + (size_t(slot) * size_t(step.kv_heads) + size_t(g)) * kDim;
    };
    std::vector<double> w(static_cast<size_t>(len));
    double max = -INFINITY, sum = 0.0;
    for (int k = 0; k < len; ++k) {
      double dot = 0.0;
      for (int d = 0; d < kDim; ++d) dot += double(step.q[size_t(h) * kDim + size_t(d)]) * row(step.k32, k)[d];
      max = std::max(max, w[size_t(k)] = dot * p.scale);
    }
    for (double& x : w) sum += (x = std::exp(x - max));
    for (int d = 0; d < kDim; ++d) {
      double want = 0.0;
      for (int k = 0; k < len; ++k) want += w[size_t(k)] / sum * row(step.v32, k)[d];
      ASSERT_NEAR(out[size_t(h) * kDim + size_t(d)], want, 2e-5) << "head " << h << " element " << d;
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
