#pragma once
// An attention step for the kernel tests: `tokens` query tokens at the end
// of each sequence's context (1: a decode step), over a shuffled page pool
// with float, f16 or int8 contents (int8 rows with random scales, keys
// centred on zero), head_dim 64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/tensor/half.h"
#include "kernels/cpu/attention/flex_attention.h"

namespace tessera::cpu {

// Every mask with every score modifier: scale 1/8, softcap 2, the given
// sliding window and ALiBi slopes (one a head).
inline std::vector<AttentionParams> every_mask_and_score(int window, const float* slopes) {
  std::vector<AttentionParams> all;
  for (MaskMod mask : {MaskMod::kCausal, MaskMod::kSlidingWindow, MaskMod::kPrefixLm}) {
    for (ScoreMod score : {ScoreMod::kNone, ScoreMod::kSoftcap, ScoreMod::kAlibi}) {
      AttentionParams p;
      p.mask = mask;
      p.score = score;
      p.scale = 0.125f;
      p.window = window;
      p.softcap = 2.0f;
      p.alibi_slopes = slopes;
      all.push_back(p);
    }
  }
  return all;
}

struct AttentionStep {
  static constexpr int kDim = 64;
  DType dtype;
  int heads, kv_heads, page, tokens;
  std::vector<int32_t> kv_len, query_start, positions, page_indptr, page_indices, prefix_len;
  std::vector<float> k32, v32, q, k_scales, v_scales, k_center, sinks;  // q: (tokens of the batch, heads, kDim)
  std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f, 0.03f, 0.02f, 0.01f, 0.005f, 0.002f};  // ALiBi, up to 9 heads
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;

  AttentionStep(DType type, std::vector<int32_t> lens, int n_heads, int n_kv_heads, int page_size, int query_tokens = 1)
      : dtype(type), heads(n_heads), kv_heads(n_kv_heads), page(page_size), tokens(query_tokens), kv_len(std::move(lens)) {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    query_start = {0}, page_indptr = {0};
    for (int32_t len : kv_len) {
      for (int t = 0; t < tokens; ++t) positions.push_back(len - tokens + t);
      query_start.push_back(query_start.back() + tokens);
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
    q.resize(positions.size() * size_t(heads) * kDim);
    for (float& x : q) x = dist(rng);
    for (int h = 0; h < heads; ++h) sinks.push_back(dist(rng));
  }
  // Every mask with every score modifier (a window whose first key lies
  // inside a group of 16), then sinks without either.
  std::vector<AttentionParams> every_modifier() const {
    std::vector<AttentionParams> all = every_mask_and_score(517, slopes.data());
    AttentionParams with_sinks;
    with_sinks.scale = 0.125f;
    with_sinks.sinks = sinks.data();
    all.push_back(with_sinks);
    return all;
  }
  // The cache type and parameters, for failure messages.
  std::string describe(const AttentionParams& p) const {
    return std::string(dtype_name(dtype)) + " mask " + std::to_string(int(p.mask)) + " score " + std::to_string(int(p.score)) +
           (p.sinks ? " sinks" : "");
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
  // The step's outputs, (tokens of the batch, heads, kDim); *chunks: how
  // many key chunks the split cut (0: run whole).
  std::vector<float> run(const AttentionParams& p, int threads, const IsaFeatures& isa, size_t* chunks = nullptr) const {
    return run_batch(batch(), q.data(), p, threads, isa, chunks);
  }
  // The outputs of one query token of the batch run as a batch of its own
  // (its sequence's context, its position): (heads, kDim).
  std::vector<float> run_token(size_t token, const AttentionParams& p, const IsaFeatures& isa) const {
    const size_t seq = token / size_t(tokens);
    const int32_t start[2] = {0, 1}, indptr[2] = {0, page_indptr[seq + 1] - page_indptr[seq]};
    const AttentionBatch one{1, start, &positions[token], &kv_len[seq], indptr, &page_indices[size_t(page_indptr[seq])],
                             &prefix_len[seq]};
    return run_batch(one, q.data() + token * size_t(heads) * kDim, p, 1, isa, nullptr);
  }

  // Causal attention of one query token of the batch, a dense softmax in
  // double over the f32 cache: (heads, kDim).
  std::vector<double> dense(size_t token, float scale) const {
    const size_t seq = token / size_t(tokens);
    const int pos = positions[token];
    std::vector<double> out(size_t(heads) * kDim, 0.0);
    for (int h = 0; h < heads; ++h) {
      const int g = h / (heads / kv_heads);
      auto row = [&](const std::vector<float>& pool, int k) {
        const int slot = page_indices[size_t(page_indptr[seq] + k / page)] * page + k % page;
        return pool.data() + (size_t(slot) * size_t(kv_heads) + size_t(g)) * kDim;
      };
      const float* qh = q.data() + (token * size_t(heads) + size_t(h)) * kDim;
      std::vector<double> w(size_t(pos) + 1);
      double max = -INFINITY, sum = 0.0;
      for (int k = 0; k <= pos; ++k) {
        double dot = 0.0;
        for (int d = 0; d < kDim; ++d) dot += double(qh[d]) * row(k32, k)[d];
        max = std::max(max, w[size_t(k)] = dot * scale);
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int k = 0; k <= pos; ++k) {
        for (int d = 0; d < kDim; ++d) out[size_t(h) * kDim + size_t(d)] += w[size_t(k)] / sum * row(v32, k)[d];
      }
    }
    return out;
  }

 private:
  std::vector<float> run_batch(const AttentionBatch& b, const float* queries, const AttentionParams& p, int threads,
                               const IsaFeatures& isa, size_t* chunks) const {
    ThreadPool pool(threads);
    std::vector<AttentionWorkItem> items;
    plan_attention_items(b, kv_heads, items);
    AttentionWorkspace workspace(pool.size());
    std::vector<float> out(size_t(b.query_start[b.n_seqs]) * size_t(heads) * kDim, NAN);
    run_attention_items(items, queries, heads, kv(), b, p, out.data(), pool, isa, workspace);
    if (chunks) *chunks = workspace.split.chunks.size();
    return out;
  }
};

}  // namespace tessera::cpu
