// The integer schemes' products (A16W8, A16W4 g128, DA8W8) on the real layer
// shapes: weight bytes streamed per second at one token (decode, compare with
// BM_ReadBandwidth) and multiply-accumulates per second at 512 (prefill).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <span>
#include <vector>

#include "kernels/cpu/linear/int_linear.h"
#include "quant/int_weights.h"

namespace tessera::cpu {
namespace {

constexpr int kThreads = 2;

quant::IntQuantConfig scheme(int64_t id) {
  if (id == 0) return {8, 0, true, ActivationPolicy::kNone};
  if (id == 1) return {4, 128, false, ActivationPolicy::kNone};
  if (id == 3) return {4, 32, false, ActivationPolicy::kNone};  // the last layer of a16w4 checkpoints
  return {8, 0, true, ActivationPolicy::kDynamicInt8Token};
}

const char* scheme_name(int64_t id) { return id == 0 ? "a16w8" : id == 1 ? "a16w4/g128" : id == 2 ? "da8w8" : "a16w4/g32"; }

const char* kLevels[] = {" avx2", " avx512", " avx512 row groups", " amx row groups", " avx2 row groups"};

// args: scheme, rows, cols, tokens, kernels (0 AVX2, 1 AVX-512, 2 AVX-512
// row groups, 3 AMX row groups, 4 AVX2 row groups)
void BM_IntMatmul(benchmark::State& state) {
  const int64_t rows = state.range(1), cols = state.range(2), tokens = state.range(3), level = state.range(4);
  IsaFeatures isa = detect_isa();
  if (level == 3 && !isa.amx_int8) return state.SkipWithError("AMX tiles not granted");
  if (level != 3) isa.amx_tile = isa.amx_int8 = isa.amx_bf16 = false;
  if (level == 0 || level == 4) isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512_vnni = false;
  else if (!isa.avx512_vnni) return state.SkipWithError("no AVX-512 VNNI");
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  std::vector<float> w(size_t(rows * cols)), x(size_t(tokens * cols)), y(size_t(tokens * rows));
  for (float& v : w) v = dist(rng);
  for (float& v : x) v = dist(rng);
  const quant::IntMatrix m = quant::quantize_rtn("bench", w.data(), rows, cols, scheme(state.range(0)));
  const IntLinear weight(m.view("bench"), isa, level >= 2 ? IntLayout::kRowGroups : IntLayout::kRows);
  const IntLinear* weights[] = {&weight};
  IntActivations acts;
  ThreadPool pool(kThreads);
  for (auto _ : state) {
    quantize_int_activations(weights, x.data(), tokens, acts);
    int_matmul(weight, acts, tokens, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  const size_t bytes = m.data.size() + m.scales.size() * sizeof(float) + m.zeros.size();
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["MAC/s"] = benchmark::Counter(double(state.iterations()) * double(rows * cols * tokens), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(scheme_name(state.range(0))) + kLevels[level]);
}

// Qwen2.5-0.5B's ffn_up, ffn_down and output head; SmolLM2's ffn_up.
void shapes(benchmark::internal::Benchmark* b, int64_t tokens) {
  const std::vector<std::pair<int64_t, int64_t>> layers = {{4864, 896}, {896, 4864}, {151936, 896}, {1536, 576}};
  for (int64_t s = 0; s < 4; ++s) {
    for (const auto& [rows, cols] : layers) {
      if (tokens > 1 && rows > 100000) continue;  // the head runs for one token per sequence
      for (int64_t level : {0, 1, 2, 3, 4}) b->Args({s, rows, cols, tokens, level});
    }
  }
}
BENCHMARK(BM_IntMatmul)->Apply([](benchmark::internal::Benchmark* b) { shapes(b, 1); })->UseRealTime();
BENCHMARK(BM_IntMatmul)->Apply([](benchmark::internal::Benchmark* b) { shapes(b, 512); })->UseRealTime()->Unit(benchmark::kMillisecond);


// One decoder layer's integer linears at one token, as a decode step calls
// them (q/k/v on one input, the output projection, gate/up on one input, down),
// over copies of the layer cycled through 256 MB so every weight comes from
// memory. Bytes are the layer's weights, scales and zero points.
// args: scheme, hidden, q rows, kv rows, ffn, layout (0 rows, 1 auto, 2 row
// groups, 3 row groups with the AVX2 kernels)
void BM_IntLayerFromMemory(benchmark::State& state) {
  const int64_t hidden = state.range(1), q_rows = state.range(2), kv_rows = state.range(3), ffn = state.range(4);
  const IntLayout layout = state.range(5) == 0 ? IntLayout::kRows : state.range(5) == 1 ? IntLayout::kAuto : IntLayout::kRowGroups;
  IsaFeatures isa = detect_isa();
  if (state.range(5) == 3) isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512_vnni = isa.amx_int8 = isa.amx_tile = false;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{q_rows, hidden}, {kv_rows, hidden}, {kv_rows, hidden},
                                                           {hidden, q_rows}, {ffn, hidden}, {ffn, hidden}, {hidden, ffn}};
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  std::vector<quant::IntMatrix> matrices;
  size_t layer_bytes = 0;
  for (const auto& [rows, cols] : shapes) {
    std::vector<float> w(size_t(rows * cols));
    for (float& v : w) v = dist(rng);
    matrices.push_back(quant::quantize_rtn("bench", w.data(), rows, cols, scheme(state.range(0))));
    const quant::IntMatrix& m = matrices.back();
    layer_bytes += m.data.size() + m.scales.size() * sizeof(float) + m.zeros.size();
  }
  const size_t copies = std::max<size_t>(2, (size_t(256) << 20) / layer_bytes);
  // Packed into huge pages as the CPU backend packs them (unless
  // TESSERA_CPU_HUGE_PAGES=0).
  HugePageArena arena;
  HugePageArena* placement = HugePageArena::wanted() ? &arena : nullptr;
  std::vector<std::vector<std::unique_ptr<IntLinear>>> layers(copies);
  for (auto& layer : layers) {
    for (const quant::IntMatrix& m : matrices) layer.push_back(std::make_unique<IntLinear>(m.view("bench"), isa, layout, placement));
  }
  std::vector<float> x(size_t(std::max(hidden, std::max(q_rows, ffn)))), y(size_t(3 * ffn));
  for (float& v : x) v = dist(rng);
  IntActivations acts;
  ThreadPool pool(kThreads);
  // Calls of one input: q/k/v, the output projection, gate/up, down.
  const std::vector<std::pair<size_t, size_t>> calls = {{0, 3}, {3, 4}, {4, 6}, {6, 7}};
  size_t next = 0;
  for (auto _ : state) {
    const auto& layer = layers[next];
    for (const auto& [first, end] : calls) {
      const IntLinear* weights[3];
      for (size_t i = first; i < end; ++i) weights[i - first] = layer[i].get();
      const std::span<const IntLinear* const> call(weights, end - first);
      quantize_int_activations(call, x.data(), 1, acts);
      float* out = y.data();
      for (const IntLinear* w : call) {
        int_matmul(*w, acts, 1, out, pool);
        out += w->rows();
      }
    }
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(layer_bytes));
  const char* layouts[] = {" rows", " auto", " row groups", " avx2 row groups"};
  state.SetLabel(std::string(scheme_name(state.range(0))) + layouts[state.range(5)]);
}
// SmolLM2-135M's and Qwen2.5-0.5B's layers.
BENCHMARK(BM_IntLayerFromMemory)->Apply([](benchmark::internal::Benchmark* b) {
  for (int64_t s = 0; s < 4; ++s) {
    for (int64_t layout : {0, 1, 2, 3}) b->Args({s, 576, 576, 192, 1536, layout})->Args({s, 896, 896, 128, 4864, layout});
  }
})->UseRealTime();

}  // namespace
}  // namespace tessera::cpu
