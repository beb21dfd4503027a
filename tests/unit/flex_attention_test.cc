// Every mask/score combination of the paged flex attention against a plain
// dense softmax reference, over a batch that mixes a prefill, a decode step
// and a prefill chunk, with pages scattered through the pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "kernels/cpu/attention/flex_attention.h"
#include "kernels/cpu/attention/hadamard.h"
#include "kernels/cpu/attention/kv_pages.h"
#include "tests/unit/attention_step.h"

namespace tessera::cpu {
namespace {

constexpr int kPage = 16, kHeads = 4, kKvHeads = 2, kDim = 8;

struct Fixture {
  DType dtype;
  int dim;
  int page;  // tokens per KV page
  std::vector<float> k_f32, v_f32;     // the cache contents as the kernel sees them
  std::vector<uint16_t> k_f16, v_f16;
  std::vector<float> k_written, v_written;  // kI8: what was written, before quantization
  std::vector<int8_t> k_i8, v_i8;
  std::vector<float> k_scales, v_scales, k_center;
  std::vector<int32_t> query_start, positions, kv_len, page_indptr, page_indices, prefix_len;
  std::vector<float> q;
  std::vector<float> slopes{0.5f, 0.25f, 0.125f, 0.0625f};

  explicit Fixture(DType type, int head_dim = kDim, int page_size = kPage) : dtype(type), dim(head_dim), page(page_size) {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    kv_len = {5, 37, 70};
    prefix_len = {3, 20, 45};
    const std::vector<std::pair<int, int>> query_ranges = {{0, 5}, {36, 37}, {40, 70}};
    int n_pages = 0;
    page_indptr = {0};
    for (int len : kv_len) page_indptr.push_back(page_indptr.back() + (len + page - 1) / page), n_pages += (len + page - 1) / page;
    page_indices.resize(size_t(n_pages));
    std::iota(page_indices.begin(), page_indices.end(), 0);
    std::shuffle(page_indices.begin(), page_indices.end(), rng);
    for (int& p : page_indices) p = p * 2 + 1;  // leave unused pages in between
    const size_t pool_elems = size_t(2 * n_pages + 2) * size_t(page) * kKvHeads * dim;
    k_f32.assign(pool_elems, 0.0f);
    v_f32.assign(pool_elems, 0.0f);
    for (float& x : k_f32) x = dist(rng);
    for (float& x : v_f32) x = dist(rng);
    if (dtype == DType::kF16) {
      for (auto* pool : {&k_f32, &v_f32}) {
        for (float& x : *pool) x = f16_to_f32(f32_to_f16(x));
      }
      for (float x : k_f32) k_f16.push_back(f32_to_f16(x));
      for (float x : v_f32) v_f16.push_back(f32_to_f16(x));
    }
    if (dtype == DType::kI8) write_int8(rng);
    query_start = {0};
    for (auto [begin, end] : query_ranges) {
      for (int p = begin; p < end; ++p) positions.push_back(p);
      query_start.push_back(query_start.back() + end - begin);
    }
    q.resize(positions.size() * kHeads * dim);
    for (float& x : q) x = dist(rng);
  }

  // Keys with a constant offset per channel (60 in one) and a wider channel,
  // as a biased key projection gives (Qwen2), written through kv_write; the
  // reference then sees them as the kernel does: dequantized, rotated back
  // and re-centred.
  void write_int8(std::mt19937& rng) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const int row = kKvHeads * dim;
    k_center.resize(size_t(row));
    for (float& c : k_center) c = 4.0f * dist(rng);
    k_center[1] = 60.0f;
    const int64_t n_slots = int64_t(k_f32.size()) / row;
    for (int64_t s = 0; s < n_slots; ++s) {
      k_f32[size_t(s * row + 3)] *= 4.0f;
      for (int i = 0; i < row; ++i) k_f32[size_t(s * row + i)] += k_center[size_t(i)];
    }
    k_written = k_f32, v_written = v_f32;
    k_i8.resize(k_f32.size()), v_i8.resize(v_f32.size());
    k_scales.resize(size_t(n_slots * kKvHeads)), v_scales.resize(k_scales.size());
    std::vector<int64_t> slots(static_cast<size_t>(n_slots));
    std::iota(slots.begin(), slots.end(), int64_t(0));
    write_kv_rows({k_i8.data(), v_i8.data(), DType::kI8, row, slots.data(), n_slots, k_written.data(), v_written.data(), dim,
                   k_scales.data(), v_scales.data(), k_center.data()});
    for (int64_t h = 0; h < n_slots * kKvHeads; ++h) {
      float* key = k_f32.data() + h * dim;
      float* value = v_f32.data() + h * dim;
      for (int d = 0; d < dim; ++d) {
        key[d] = float(k_i8[size_t(h * dim + d)]) * k_scales[size_t(h)];
        value[d] = float(v_i8[size_t(h * dim + d)]) * v_scales[size_t(h)];
      }
      if (hadamard_applies(dim)) walsh_hadamard(key, dim);
      for (int d = 0; d < dim; ++d) key[d] += k_center[size_t(h % kKvHeads * dim + d)];
    }
  }

  PagedKv kv() const {
    if (dtype == DType::kF16) return {k_f16.data(), v_f16.data(), dtype, page, kKvHeads, dim};
    if (dtype == DType::kI8) {
      return {k_i8.data(), v_i8.data(), dtype, page, kKvHeads, dim, k_scales.data(), v_scales.data(), k_center.data()};
    }
    return {k_f32.data(), v_f32.data(), dtype, page, kKvHeads, dim};
  }
  AttentionBatch batch() const {
    return {3, query_start.data(), positions.data(), kv_len.data(), page_indptr.data(), page_indices.data(), prefix_len.data()};
  }
  const float* key(int seq, int pos, int kv_head, const std::vector<float>& pool) const {
    const int slot_page = page_indices[size_t(page_indptr[size_t(seq)] + pos / page)];
    return pool.data() + ((size_t(slot_page) * size_t(page) + size_t(pos % page)) * kKvHeads + size_t(kv_head)) * dim;
  }
};

bool visible(MaskMod mask, int q, int k, int window, int prefix) {
  switch (mask) {
    case MaskMod::kCausal: return k <= q;
    case MaskMod::kSlidingWindow: return k <= q && q - k < window;
    case MaskMod::kPrefixLm: return k <= q || k < prefix;
  }
  return false;
}

// With an f16 cache, queries and probabilities are rounded to f16 as they
// enter the f16 products; the reference does the same.
std::vector<float> dense_reference(const Fixture& f, const AttentionParams& p) {
  const bool f16 = f.dtype == DType::kF16;
  auto round = [f16](double x) { return f16 ? double(f16_to_f32(f32_to_f16(float(x)))) : x; };
  std::vector<float> out(f.q.size());
  for (int s = 0; s < 3; ++s) {
    for (int t = f.query_start[size_t(s)]; t < f.query_start[size_t(s) + 1]; ++t) {
      const int qpos = f.positions[size_t(t)];
      for (int h = 0; h < kHeads; ++h) {
        const int g = h / (kHeads / kKvHeads);
        const float* qv = f.q.data() + (size_t(t) * kHeads + size_t(h)) * f.dim;
        std::vector<double> scores;
        std::vector<int> keys;
        for (int k = 0; k < f.kv_len[size_t(s)]; ++k) {
          if (!visible(p.mask, qpos, k, p.window, f.prefix_len[size_t(s)])) continue;
          double dot = 0.0;
          for (int d = 0; d < f.dim; ++d) dot += round(qv[d]) * f.key(s, k, g, f.k_f32)[d];
          dot *= p.scale;
          if (p.score == ScoreMod::kSoftcap) dot = p.softcap * std::tanh(dot / p.softcap);
          if (p.score == ScoreMod::kAlibi) dot += double(p.alibi_slopes[h]) * (k - qpos);
          scores.push_back(dot);
          keys.push_back(k);
        }
        const double mx = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (double& x : scores) sum += (x = std::exp(x - mx));
        for (double& x : scores) x = round(x / sum);
        for (int d = 0; d < f.dim; ++d) {
          double acc = 0.0;
          for (size_t i = 0; i < keys.size(); ++i) acc += scores[i] * f.key(s, keys[i], g, f.v_f32)[d];
          out[(size_t(t) * kHeads + size_t(h)) * f.dim + size_t(d)] = float(acc);
        }
      }
    }
  }
  return out;
}

using Combo = std::tuple<MaskMod, ScoreMod, DType>;

class FlexAttention : public ::testing::TestWithParam<Combo> {};

TEST_P(FlexAttention, MatchesDenseReference) {
  const auto [mask, score, dtype] = GetParam();
  const Fixture f(dtype);
  AttentionParams p;
  p.mask = mask;
  p.score = score;
  p.scale = 1.0f / std::sqrt(float(kDim));
  p.window = 7;
  p.softcap = 2.0f;
  p.alibi_slopes = f.slopes.data();
  ThreadPool pool(2);
  std::vector<float> out(f.q.size(), NAN);
  const std::vector<float> want = dense_reference(f, p);
  // Every build of the kernel, the portable one included, gives the same bits.
  std::vector<float> portable(f.q.size(), NAN);
  flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, portable.data(), pool, IsaFeatures{});
  flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, out.data(), pool, detect_isa());
  EXPECT_EQ(0, std::memcmp(portable.data(), out.data(), out.size() * sizeof(float)));
  // f16 probabilities sit on a grid of 2^-11 relative steps; a score that
  // differs in its last bit can land one step over, so f16 allows a few steps.
  // int8 keys meet the queries rotated, and their centre is added back to
  // scores in the hundreds: rounding in a different order.
  const double tolerance = dtype == DType::kF16 ? 2e-3 : dtype == DType::kI8 ? 2e-4 : 2e-5;
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], tolerance) << "element " << i;
}

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
  static const char* const masks[] = {"causal", "window", "prefixlm"};
  static const char* const scores[] = {"none", "softcap", "alibi"};
  return std::string(masks[int(std::get<0>(info.param))]) + "_" + scores[int(std::get<1>(info.param))] + "_" +
         std::string(dtype_name(std::get<2>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllModifiers, FlexAttention,
                         ::testing::Combine(::testing::Values(MaskMod::kCausal, MaskMod::kSlidingWindow, MaskMod::kPrefixLm),
                                            ::testing::Values(ScoreMod::kNone, ScoreMod::kSoftcap, ScoreMod::kAlibi),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kI8)),
                         combo_name);

// Scaling the queries (llama.cpp's Gemma graph) rounds q * scale to f16, not
// q: components that scale into f16's subnormal range keep fewer bits. The
// result must be that of queries scaled beforehand, and differ from scaling
// the scores.
TEST(FlexAttentionScaledQueries, RoundAfterScaling) {
  constexpr int kTokens = 3, kHeadsHere = 2;
  const float scale = 1.0f / 1024.0f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-0.05f, 0.05f), large(-30000.0f, 30000.0f), value(-1000.0f, 1000.0f);
  std::vector<uint16_t> k(size_t(kPage) * kDim), v(size_t(kPage) * kDim);
  for (int i = 0; i < kTokens * kDim; ++i) k[size_t(i)] = f32_to_f16(large(rng)), v[size_t(i)] = f32_to_f16(value(rng));
  std::vector<float> q(size_t(kTokens) * kHeadsHere * kDim), q_scaled(q.size());
  for (size_t i = 0; i < q.size(); ++i) q_scaled[i] = (q[i] = small(rng)) * scale;
  const std::vector<int32_t> query_start{0, kTokens}, positions{0, 1, 2}, kv_len{kTokens}, page_indptr{0, 1}, pages{0};
  const AttentionBatch batch{1, query_start.data(), positions.data(), kv_len.data(), page_indptr.data(), pages.data()};
  const PagedKv kv{k.data(), v.data(), DType::kF16, kPage, 1, kDim};
  ThreadPool pool(1);
  auto run = [&](const std::vector<float>& queries, float s, bool scale_queries) {
    AttentionParams p;
    p.scale = s;
    p.scale_queries = scale_queries;
    std::vector<float> out(q.size(), NAN);
    flex_attention(queries.data(), kHeadsHere, kv, batch, p, out.data(), pool, detect_isa());
    return out;
  };
  const std::vector<float> scaled_queries = run(q, scale, true);
  EXPECT_EQ(run(q_scaled, 1.0f, false), scaled_queries);
  EXPECT_NE(run(q, scale, false), scaled_queries);
}

// Head sizes that are a multiple of 16 take the vector score path (eight keys
// at a time); it must give the portable build's bits, for keys in and out of
// groups of eight. The large scale spreads scores so far that most
// exponentials leave the normal range (the vector exponential's scalar path).
TEST(FlexAttentionBuilds, AgreeBitForBitAtHeadDim64) {
  for (auto [dtype, scale] : {std::pair{DType::kF32, 0.125f}, std::pair{DType::kF16, 0.125f}, std::pair{DType::kF32, 40.0f},
                              std::pair{DType::kF16, 40.0f}}) {
    const Fixture f(dtype, 64);
    AttentionParams p;
    p.scale = scale;
    ThreadPool pool(2);
    std::vector<float> portable(f.q.size(), NAN), native(f.q.size(), NAN), avx2(f.q.size(), NAN);
    flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, portable.data(), pool, IsaFeatures{});
    flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, native.data(), pool, detect_isa());
    EXPECT_EQ(0, std::memcmp(portable.data(), native.data(), native.size() * sizeof(float)));
    // On AVX-512 machines native is the AVX-512 build; the AVX2 one too.
    IsaFeatures no_avx512 = detect_isa();
    no_avx512.avx512f = false;
    flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, avx2.data(), pool, no_avx512);
    EXPECT_EQ(0, std::memcmp(portable.data(), avx2.data(), avx2.size() * sizeof(float)));
    // Scores in the hundreds carry absolute rounding errors too large for the
    // reference tolerance; those runs check the bits only.
    if (scale > 1.0f) continue;
    const std::vector<float> want = dense_reference(f, p);
    const double tolerance = dtype == DType::kF16 ? 2e-3 : 2e-5;
    for (size_t i = 0; i < native.size(); ++i) ASSERT_NEAR(native[i], want[i], tolerance) << "element " << i;
  }
}

// The AVX-512 build scores sixteen keys at a time, each key in a lane; with
// every mask, score modifier and cache type it must still give the portable
// build's bits. Pages of 24 tokens end part-way through a block of 16.
TEST(FlexAttentionBuilds, AgreeBitForBitWithEveryModifierAtHeadDim64) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8}) {
    const Fixture f(dtype, 64, 24);
    for (const AttentionParams& p : every_mask_and_score(7, f.slopes.data())) {
      ThreadPool pool(2);
      std::vector<float> portable(f.q.size(), NAN), native(f.q.size(), NAN);
      flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, portable.data(), pool, IsaFeatures{});
      flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, native.data(), pool, detect_isa());
      EXPECT_EQ(0, std::memcmp(portable.data(), native.data(), native.size() * sizeof(float)))
          << dtype_name(dtype) << " mask " << int(p.mask) << " score " << int(p.score);
    }
  }
}

// Against the keys and values as written, before quantization: centring and
// rotation keep the error of one scale per token and head small even with
// an offset of 60 and an outlier channel; the head sizes with and without
// the rotation.
TEST(FlexAttentionInt8, NearTheUnquantizedCache) {
  for (int dim : {8, 64, 48}) {
    Fixture f(DType::kI8, dim);
    AttentionParams p;
    p.scale = 1.0f / std::sqrt(float(dim));
    ThreadPool pool(2);
    std::vector<float> out(f.q.size(), NAN);
    flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, out.data(), pool, detect_isa());
    f.k_f32 = f.k_written, f.v_f32 = f.v_written;
    const std::vector<float> want = dense_reference(f, p);
    double worst = 0.0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(double(out[i]) - want[i]));
    EXPECT_LT(worst, 0.04) << "head size " << dim;
    // The centre took the offset of 60 out of the keys' scales (unrotated:
    // the one head size where the offset would stand alone in its channel).
    const float largest_scale = *std::max_element(f.k_scales.begin(), f.k_scales.end());
    if (!hadamard_applies(dim)) EXPECT_LT(largest_scale, 30.0f / 127.0f);
  }
}

// A tensor-parallel rank holds a run of query heads that may start or end
// inside a KV head's group: its outputs are the whole model's for those
// heads, bit for bit, whether it holds both KV heads or only the last.
TEST(FlexAttentionQueryGroups, ARunOfHeadsMatchesTheWholeModel) {
  for (DType dtype : {DType::kF32, DType::kF16}) {
    const Fixture f(dtype, 64);
    AttentionParams whole_params;
    whole_params.scale = 0.125f;
    ThreadPool pool(3);  // more threads than decode items: a KV head's heads split into parts
    std::vector<float> whole(f.q.size(), NAN);
    flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), whole_params, whole.data(), pool, detect_isa());
    const size_t n_tokens = f.positions.size(), dim = 64;
    struct Run {
      int first, count, kv_first, kv_count;
    };
    for (const Run& r : {Run{1, 2, 0, 2}, Run{1, 3, 0, 2}, Run{3, 1, 1, 1}, Run{0, 3, 0, 2}}) {
      // (tokens, r.count heads, dim) of q; the KV pools cut to r's KV heads.
      std::vector<float> q(n_tokens * size_t(r.count) * dim);
      for (size_t t = 0; t < n_tokens; ++t) {
        std::memcpy(&q[(t * size_t(r.count)) * dim], &f.q[(t * kHeads + size_t(r.first)) * dim], size_t(r.count) * dim * sizeof(float));
      }
      const size_t slots = f.k_f32.size() / (kKvHeads * dim);
      std::vector<float> k32, v32;
      std::vector<uint16_t> k16, v16;
      for (size_t s = 0; s < slots; ++s) {
        const size_t from = (s * kKvHeads + size_t(r.kv_first)) * dim, n = size_t(r.kv_count) * dim;
        k32.insert(k32.end(), f.k_f32.begin() + long(from), f.k_f32.begin() + long(from + n));
        v32.insert(v32.end(), f.v_f32.begin() + long(from), f.v_f32.begin() + long(from + n));
        if (dtype == DType::kF16) {
          k16.insert(k16.end(), f.k_f16.begin() + long(from), f.k_f16.begin() + long(from + n));
          v16.insert(v16.end(), f.v_f16.begin() + long(from), f.v_f16.begin() + long(from + n));
        }
      }
      const PagedKv kv = dtype == DType::kF16 ? PagedKv{k16.data(), v16.data(), dtype, kPage, r.kv_count, 64}
                                              : PagedKv{k32.data(), v32.data(), dtype, kPage, r.kv_count, 64};
      AttentionParams p = whole_params;
      p.query_group = kHeads / kKvHeads;
      p.query_head_offset = r.first - r.kv_first * p.query_group;
      std::vector<float> part(q.size(), NAN);
      flex_attention(q.data(), r.count, kv, f.batch(), p, part.data(), pool, detect_isa());
      for (size_t t = 0; t < n_tokens; ++t) {
        EXPECT_EQ(0, std::memcmp(&part[t * size_t(r.count) * dim], &whole[(t * kHeads + size_t(r.first)) * dim],
                                 size_t(r.count) * dim * sizeof(float)))
            << dtype_name(dtype) << " heads " << r.first << "+" << r.count << ", token " << t;
      }
    }
  }
}

TEST(FlexAttentionArgs, BadParametersAreErrors) {
  const Fixture f(DType::kF32);
  ThreadPool pool(1);
  std::vector<float> out(f.q.size());
  AttentionParams p;
  p.mask = MaskMod::kSlidingWindow;  // window left at 0
  EXPECT_THROW(flex_attention(f.q.data(), kHeads, f.kv(), f.batch(), p, out.data(), pool, detect_isa()), Error);
  EXPECT_THROW(flex_attention(f.q.data(), 3, f.kv(), f.batch(), AttentionParams{}, out.data(), pool, detect_isa()), Error);
  AttentionParams groups;
  groups.query_group = 2;
  groups.query_head_offset = 2;  // a whole group before the first head: not this rank's KV head
  EXPECT_THROW(flex_attention(f.q.data(), 2, f.kv(), f.batch(), groups, out.data(), pool, detect_isa()), Error);
  groups.query_head_offset = 1;  // three heads from offset 1 read KV heads 0 and 1; five would need a third
  EXPECT_NO_THROW(flex_attention(f.q.data(), 3, f.kv(), f.batch(), groups, out.data(), pool, detect_isa()));
  EXPECT_THROW(flex_attention(f.q.data(), 4, f.kv(), f.batch(), groups, out.data(), pool, detect_isa()), Error);
}

}  // namespace
}  // namespace tessera::cpu
