// The KV write and paged attention against the CPU backend: a batch mixing a
// prefill, a decode step and a prefill chunk, pages scattered through the
// pool, over real models' head layouts, every mask and score modifier and
// both cache element types.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "tests/gpu/parity.h"

namespace tessera::test {
namespace {

constexpr int kPage = 16, kPoolPages = 64;

struct Layout {
  const char* model;
  int heads, kv_heads, dim;
  int group = 0, offset = 0;  // ops::AttentionParams' query grouping
};

// The last two: SmolLM2's heads as two tensor-parallel ranks hold them,
// query heads 0-4 over KV heads 0-1 and query heads 5-8 over KV heads 1-2.
const Layout kLayouts[] = {{"smollm2", 9, 3, 64},        {"qwen2.5", 14, 2, 64},
                           {"gemma3", 4, 1, 256},        {"mha128", 8, 8, 128},
                           {"smollm2 rank 0", 5, 2, 64, 3, 0}, {"smollm2 rank 1", 4, 2, 64, 3, 2}};

// Sequence s holds kv_len[s] keys; its last n_new[s] tokens are this step's
// queries. The last is longer than a kernel's tile of 256 keys.
const std::vector<int32_t> kKvLen{37, 100, 70, 530}, kNew{37, 1, 20, 40}, kPrefix{10, 60, 55, 300};

struct Batch {
  std::vector<int32_t> query_start{0}, positions, page_indptr{0}, page_indices;
  std::vector<int64_t> all_slots;  // a slot for every cached key of every sequence
};

Batch make_batch(std::mt19937& rng) {
  std::vector<int32_t> pool(kPoolPages);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  Batch b;
  size_t next_page = 0;
  for (size_t s = 0; s < kKvLen.size(); ++s) {
    const int pages = (kKvLen[s] + kPage - 1) / kPage;
    for (int p = 0; p < pages; ++p) b.page_indices.push_back(pool[next_page++]);
    b.page_indptr.push_back(int32_t(b.page_indices.size()));
    for (int pos = 0; pos < kKvLen[s]; ++pos) {
      b.all_slots.push_back(int64_t(b.page_indices[size_t(b.page_indptr[s] + pos / kPage)]) * kPage + pos % kPage);
    }
    for (int pos = kKvLen[s] - kNew[s]; pos < kKvLen[s]; ++pos) b.positions.push_back(pos);
    b.query_start.push_back(int32_t(b.positions.size()));
  }
  return b;
}

struct Case {
  ops::MaskMod mask;
  ops::ScoreMod score;
  const char* name;
  bool sinks = false;  // a learned logit per head joins each softmax (gpt-oss)
};

const Case kCases[] = {{ops::MaskMod::kCausal, ops::ScoreMod::kNone, "causal"},
                       {ops::MaskMod::kSlidingWindow, ops::ScoreMod::kNone, "window"},
                       {ops::MaskMod::kPrefixLm, ops::ScoreMod::kNone, "prefix-lm"},
                       {ops::MaskMod::kCausal, ops::ScoreMod::kSoftcap, "causal+softcap"},
                       {ops::MaskMod::kSlidingWindow, ops::ScoreMod::kSoftcap, "window+softcap"},
                       {ops::MaskMod::kCausal, ops::ScoreMod::kAlibi, "causal+alibi"},
                       {ops::MaskMod::kSlidingWindow, ops::ScoreMod::kNone, "window+sinks", true}};

class AttentionParity : public Parity {};

TEST_P(AttentionParity, EveryLayoutMaskAndScore) {
  const Batch batch = make_batch(rng_);
  const int n_tokens = int(batch.positions.size()), n_cached = int(batch.all_slots.size());
  for (const Layout& layout : kLayouts) {
    for (DType dtype : {DType::kF16, DType::kF32}) {
      const int64_t row = int64_t(layout.kv_heads) * layout.dim;
      const auto k = normal_values(rng_, size_t(n_cached * row)), v = normal_values(rng_, size_t(n_cached * row));
      const auto q = normal_values(rng_, size_t(n_tokens) * size_t(layout.heads * layout.dim));
      std::vector<float> slopes(size_t(layout.heads));
      for (int h = 0; h < layout.heads; ++h) slopes[size_t(h)] = std::pow(2.0f, -float(h + 1));
      const auto sinks = normal_values(rng_, size_t(layout.heads), 2.0f);  // gpt-oss's learned logits
      const size_t pool_bytes = size_t(kPoolPages) * kPage * size_t(row) * (dtype == DType::kF16 ? 2 : 4);
      for (const Case& c : kCases) {
        std::vector<float> outs[2];
        std::vector<uint8_t> pages[2];
        for (int b = 0; b < 2; ++b) {
          Backend& be = b == 0 ? *cpu_ : *gpu_;
          Stream& s = be.default_stream();
          void* k_pages = zeros<uint8_t>(be, pool_bytes);
          void* v_pages = zeros<uint8_t>(be, pool_bytes);
          be.kernels().kv_write({k_pages, v_pages, dtype, row, upload(be, batch.all_slots), n_cached, upload(be, k), upload(be, v)}, s);
          ops::AttentionBatch ab{int(kKvLen.size()),          upload(be, batch.query_start), upload(be, batch.positions),
                                 upload(be, kKvLen),          upload(be, batch.page_indptr), upload(be, batch.page_indices),
                                 upload(be, kPrefix)};
          auto plan = be.create_attention_plan(n_tokens, int(kKvLen.size()), layout.kv_heads);
          be.kernels().plan_attention({ab, n_tokens, layout.kv_heads, plan.get()}, s);
          ops::AttentionParams p;
          p.mask = c.mask;
          p.score = c.score;
          p.scale = 1.0f / std::sqrt(float(layout.dim));
          p.scale_queries = c.score == ops::ScoreMod::kSoftcap;
          p.window = 24;
          p.softcap = 2.0f;
          p.alibi_slopes = upload(be, slopes);
          p.sinks = c.sinks ? upload(be, sinks) : nullptr;
          p.query_group = layout.group;
          p.query_head_offset = layout.offset;
          const ops::PagedKv kv{k_pages, v_pages, dtype, kPage, layout.kv_heads, layout.dim};
          float* out = zeros<float>(be, q.size());
          be.kernels().attention({plan.get(), upload(be, q), layout.heads, kv, p, out}, s);
          outs[b] = download(be, out, q.size());
          pages[b] = download(be, static_cast<uint8_t*>(k_pages), pool_bytes);
        }
        const std::string what = std::string(layout.model) + " " + std::string(dtype_name(dtype)) + " " + c.name;
        EXPECT_EQ(pages[0], pages[1]) << what << ": the written keys differ";
        // The kernels follow the CPU's arithmetic step for step; only the
        // softcap's tanh may differ in its last bit, which an f16 cache's
        // rounding of the probabilities can widen to 1e-4.
        // A sink's exponential is the device library's, which may differ in
        // its last bit and so move the normaliser.
        if (c.score != ops::ScoreMod::kSoftcap && !c.sinks) {
          EXPECT_EQ(0u, bit_differences(outs[1], outs[0])) << what;
        }
        EXPECT_LT(max_relative_error(outs[1], outs[0]), c.score == ops::ScoreMod::kSoftcap ? 1e-4 : 1e-5) << what;
      }
    }
  }
}

TEST_P(AttentionParity, Int8CacheIsRefusedUpFront) {
  EXPECT_FALSE(gpu_->supports(Op::kAttention, DType::kI8));
  EXPECT_FALSE(gpu_->supports(Op::kKvWrite, DType::kI8));
}

TESSERA_PARITY_SUITE(AttentionParity);

}  // namespace
}  // namespace tessera::test
