// Decode-shaped products (one or a few tokens against a weight matrix) per
// weight format and instruction set, reported as weight bytes read per
// second, beside the machine's read bandwidth with the same thread count.
//
//   build/tests/tessera_kernel_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/cpu/linear/matmul.h"
#include "quant/gguf_blocks.h"

namespace tessera::cpu {
namespace {

constexpr int kThreads = 2;

// Random blocks of `dtype` with finite scales (f16 0.0–1.0) in every block's
// leading scale field; the quantised values are random bytes.
std::vector<uint8_t> random_weights(DType dtype, int64_t rows, int64_t cols) {
  const size_t bytes = *dtype_bytes(dtype, uint64_t(rows * cols));
  std::vector<uint8_t> w(bytes);
  std::mt19937 rng(7);
  for (uint8_t& b : w) b = uint8_t(rng());
  const DTypeInfo& info = dtype_info(dtype);
  for (size_t at = 0; at + info.block_bytes <= bytes; at += info.block_bytes) {
    const uint16_t scale = 0x3000 | uint16_t(rng() & 0x3ff);  // f16 in [0.125, 0.25)
    std::memcpy(&w[at], &scale, 2);
    if (dtype == DType::kQ4_1 || dtype == DType::kQ4_K) std::memcpy(&w[at + 2], &scale, 2);
  }
  return w;
}

IsaFeatures isa_named(int level) {
  IsaFeatures isa = detect_isa();
  if (level == 0) isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512_vnni = false;
  return isa;
}

// args: dtype (as int), rows, cols, tokens, isa level (0 AVX2, 1 AVX-512)
void BM_Matmul(benchmark::State& state) {
  const auto dtype = DType(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const IsaFeatures isa = isa_named(int(state.range(4)));
  if (state.range(4) == 1 && !(detect_isa().avx512_vnni)) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  const std::vector<uint8_t> w = random_weights(dtype, rows, cols);
  const LinearWeight weight("bench", dtype, w.data(), rows, cols, isa);
  std::vector<float> x(size_t(tokens * cols)), y(size_t(tokens * rows));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (float& v : x) v = dist(rng);
  ThreadPool pool(kThreads);
  MatmulScratch scratch;
  for (auto _ : state) {
    matmul(weight, x.data(), tokens, y.data(), scratch, pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(w.size()));
  state.counters["MAC/s"] = benchmark::Counter(double(state.iterations()) * double(rows * cols * tokens), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + (state.range(4) ? " avx512" : " avx2"));
}

void decode_shapes(benchmark::internal::Benchmark* b) {
  // Qwen2.5-0.5B's ffn_up (Q5_0), ffn_down (Q4_K, Q6_K), output (Q8_0);
  // SmolLM2's ffn_up (Q4_1).
  const std::vector<std::vector<int64_t>> shapes = {{int64_t(DType::kQ5_0), 4864, 896},  {int64_t(DType::kQ4_K), 896, 4864},
                                                    {int64_t(DType::kQ6_K), 896, 4864},  {int64_t(DType::kQ8_0), 151936, 896},
                                                    {int64_t(DType::kQ4_1), 1536, 576},  {int64_t(DType::kQ4_0), 4864, 896}};
  for (const auto& s : shapes) {
    for (int64_t isa : {0, 1}) b->Args({s[0], s[1], s[2], 1, isa});
  }
}
BENCHMARK(BM_Matmul)->Apply(decode_shapes)->UseRealTime();

// A few tokens (decode, or a speculative step's verification) against
// copies of the weight cycled through 256 MB, so every product reads its
// weights from memory as a decode step does (a model's layers together are
// far larger than the caches). args: dtype, rows, cols, tokens, and whether
// the weight keeps a row-group copy for prompts (the output head keeps none).
void BM_MatmulFromMemory(benchmark::State& state) {
  const auto dtype = DType(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3);
  const bool prompt_copy = state.range(4) != 0;
  const std::vector<uint8_t> one = random_weights(dtype, rows, cols);
  const size_t copies = std::max<size_t>(2, (size_t(256) << 20) / one.size());
  std::vector<uint8_t> all(one.size() * copies);
  std::vector<LinearWeight> weights;
  for (size_t c = 0; c < copies; ++c) {
    std::memcpy(all.data() + c * one.size(), one.data(), one.size());
    weights.emplace_back("bench", dtype, all.data() + c * one.size(), rows, cols, detect_isa(), prompt_copy);
  }
  std::vector<float> x(size_t(tokens * cols)), y(size_t(tokens * rows));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (float& v : x) v = dist(rng);
  ThreadPool pool(kThreads);
  MatmulScratch scratch;
  size_t next = 0;
  for (auto _ : state) {
    matmul(weights[next], x.data(), tokens, y.data(), scratch, pool);
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(one.size()));
  state.counters["MAC/s"] = benchmark::Counter(double(state.iterations()) * double(rows * cols * tokens), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)));
}
void memory_shapes(benchmark::internal::Benchmark* b) {
  // SmolLM2's ffn_up and ffn_down (Q4_1), Qwen2.5-0.5B's ffn_up (Q5_0),
  // ffn_down (Q4_K, Q6_K) and output (Q8_0).
  const std::vector<std::vector<int64_t>> shapes = {{int64_t(DType::kQ4_1), 1536, 576}, {int64_t(DType::kQ4_1), 576, 1536},
                                                    {int64_t(DType::kQ5_0), 4864, 896}, {int64_t(DType::kQ4_K), 896, 4864},
                                                    {int64_t(DType::kQ6_K), 896, 4864}, {int64_t(DType::kQ8_0), 151936, 896}};
  for (const auto& s : shapes) b->Args({s[0], s[1], s[2], 1, 1});
  // One expert of the 8-expert MoE bench shape (qwen3moe-8x): gate or up
  // (Q4_K), and down (Q4_K or Q6_K); small matrices, where a call's fixed
  // costs weigh most.
  b->Args({int64_t(DType::kQ4_K), 1536, 1024, 1, 1})->Args({int64_t(DType::kQ4_K), 1024, 1536, 1, 1});
  b->Args({int64_t(DType::kQ6_K), 1024, 1536, 1, 1});
  // One gpt-oss-20b expert matrix (MXFP4).
  b->Args({int64_t(DType::kMXFP4), 2880, 2880, 1, 1});
  // Plain floating-point checkpoints (Qwen2.5-0.5B's ffn_up): bf16 read as
  // stored, against the f32 a CPU without bf16 products once widened it to.
  for (const DType dense : {DType::kBF16, DType::kF16, DType::kF32}) b->Args({int64_t(dense), 4864, 896, 1, 1});
  // The steps of a speculative verification (up to eight tokens); the
  // output head without a row-group copy, as a model holds it.
  for (int64_t tokens : {2, 4, 8}) {
    b->Args({int64_t(DType::kQ5_0), 4864, 896, tokens, 1})->Args({int64_t(DType::kQ4_K), 896, 4864, tokens, 1});
    b->Args({int64_t(DType::kQ6_K), 896, 4864, tokens, 1})->Args({int64_t(DType::kQ4_1), 1536, 576, tokens, 1});
    b->Args({int64_t(DType::kQ8_0), 151936, 896, tokens, 0});
  }
}
BENCHMARK(BM_MatmulFromMemory)->Apply(memory_shapes)->UseRealTime();

// The same weights against a 512-token prompt chunk (prefill).
void prefill_shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> shapes = {{int64_t(DType::kQ5_0), 4864, 896}, {int64_t(DType::kQ4_K), 896, 4864},
                                                    {int64_t(DType::kQ6_K), 896, 4864}, {int64_t(DType::kQ4_1), 1536, 576},
                                                    {int64_t(DType::kQ8_0), 4864, 896}, {int64_t(DType::kQ4_0), 4864, 896}};
  for (const auto& s : shapes) {
    for (int64_t isa : {0, 1}) b->Args({s[0], s[1], s[2], 512, isa});
  }
  for (const DType dense : {DType::kBF16, DType::kF32}) b->Args({int64_t(dense), 4864, 896, 512, 0});
  // A gpt-oss-20b expert (MXFP4) with its share of a 512-token prompt: 4 of 32 experts a token.
  b->Args({int64_t(DType::kMXFP4), 2880, 2880, 64, 1});
}
BENCHMARK(BM_Matmul)->Apply(prefill_shapes)->UseRealTime()->Unit(benchmark::kMillisecond);

// Read bandwidth of `kThreads` threads streaming a buffer far beyond the caches.
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t bytes = size_t(1) << 30;
  std::vector<uint8_t> buffer(bytes, 1);
  ThreadPool pool(kThreads);
  for (auto _ : state) {
    std::vector<long long> sums(kThreads);
    pool.parallel_for(int64_t(bytes / 64), 1 << 16, [&](int t, int64_t begin, int64_t end) {
      __m256i acc = _mm256_setzero_si256();
      for (int64_t i = begin; i < end; ++i) {
        const auto* line = reinterpret_cast<const __m256i*>(buffer.data() + i * 64);
        acc = _mm256_add_epi64(acc, _mm256_add_epi64(_mm256_loadu_si256(line), _mm256_loadu_si256(line + 1)));
      }
      sums[size_t(t)] += _mm256_extract_epi64(acc, 0);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_ReadBandwidth)->UseRealTime();

}  // namespace
}  // namespace tessera::cpu

BENCHMARK_MAIN();
