// Paged attention of one layer, SmolLM2-135M's, Qwen2.5-0.5B's and Gemma 3
// 270M's shapes, on an f16 cache of 16-token pages: a 512-token causal prompt
// (prefill) and one token against 512 to 8,192 cached ones (decode), for
// each kernel build the machine runs (every build gives the same bits).
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "engine/tensor/half.h"
#include "kernels/cpu/attention/flex_attention.h"

namespace tessera::cpu {
namespace {

constexpr int kThreads = 2, kPage = 16, kHeadDim = 64;

// args: query heads, KV heads, query tokens (the last ones of the context),
// build (0 AVX2, 1 AVX-512), context (keys, the queries' included)
void BM_Attention(benchmark::State& state) {
  const int heads = int(state.range(0)), kv_heads = int(state.range(1)), tokens = int(state.range(2));
  const int context = int(state.range(4));
  IsaFeatures isa = detect_isa();
  if (!(isa.avx2 && isa.fma && isa.f16c)) return state.SkipWithError("no AVX2/FMA/F16C");
  if (state.range(3) == 1 && !isa.avx512f) return state.SkipWithError("no AVX-512");
  if (state.range(3) == 0) isa.avx512f = false;
  const int pages = context / kPage;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<uint16_t> k(size_t(pages) * kPage * size_t(kv_heads) * kHeadDim), v(k.size());
  for (auto& x : k) x = f32_to_f16(dist(rng));
  for (auto& x : v) x = f32_to_f16(dist(rng));
  std::vector<float> q(size_t(tokens) * size_t(heads) * kHeadDim), out(q.size());
  for (float& x : q) x = dist(rng);
  std::vector<int32_t> query_start = {0, tokens}, kv_len = {context}, page_indptr = {0, pages};
  std::vector<int32_t> positions(static_cast<size_t>(tokens)), page_indices(static_cast<size_t>(pages));
  std::iota(positions.begin(), positions.end(), context - tokens);
  std::iota(page_indices.begin(), page_indices.end(), 0);
  const PagedKv kv{k.data(), v.data(), DType::kF16, kPage, kv_heads, kHeadDim};
  const AttentionBatch batch{1, query_start.data(), positions.data(), kv_len.data(), page_indptr.data(), page_indices.data()};
  AttentionParams params;
  params.scale = 0.125f;
  ThreadPool pool(kThreads);
  std::vector<AttentionWorkItem> items;
  plan_attention_items(batch, kv_heads, items);
  AttentionWorkspace workspace(pool.size());
  std::vector<char> flush(state.range(5) ? size_t(64) << 20 : 0);
  for (auto _ : state) {
    if (!flush.empty()) {
      state.PauseTiming();
      for (size_t i = 0; i < flush.size(); i += 64) flush[i] = char(flush[i] + 1);
      benchmark::DoNotOptimize(flush.data());
      state.ResumeTiming();
    }
    run_attention_items(items, q.data(), heads, kv, batch, params, out.data(), pool, isa, workspace);
    benchmark::DoNotOptimize(out.data());
  }
  // Scores of visible (query, key) pairs, every query head.
  const double visible = double(tokens) * (context - tokens) + double(tokens) * (tokens + 1) / 2;
  state.counters["scores/s"] = benchmark::Counter(double(state.iterations()) * visible * heads, benchmark::Counter::kIsRate);
  state.SetLabel(state.range(3) == 1 ? "avx512" : "avx2");
}
BENCHMARK(BM_Attention)->Apply([](benchmark::internal::Benchmark* b) {
  for (int64_t build : {0, 1}) {
    b->Args({9, 3, 512, build, 512, 0})->Args({14, 2, 512, build, 512, 0});
    for (int64_t context : {128, 512, 2048, 8192}) {
      for (int64_t cold : {0, 1}) {
        b->Args({9, 3, 1, build, context, cold})->Args({14, 2, 1, build, context, cold})->Args({4, 1, 1, build, context, cold});
      }
    }
  }
})->UseRealTime();

}  // namespace
}  // namespace tessera::cpu
