// Accelerator kernels against the device's memory bandwidth: decode linears
// (the GGUF formats the real models use and f16, on their layer shapes, at
// 1, 4 and 16 tokens) and paged decode attention (the real models' head
// layouts, several context lengths and batch sizes, f16 cache).
//
// Each case runs many calls recorded as one graph where the backend records
// (CUDA), as decode steps are replayed, round-robin over enough copies of its
// weights or cache that they do not stay in the device's cache. One JSON line
// per case: microseconds a call (median of --reps replays), the bytes a call
// must read, and their rate (with --peak-gbs, its share of that peak).
//
//   tessera_accel_bench [--device cuda:0] [--reps 7] [--peak-gbs 3350] [--only linear|attention]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend_registry.h"
#include "quant/weight_scheme.h"
#include "tests/gpu/random_weights.h"

namespace tessera::bench {
namespace {

struct Options {
  std::string device = "cuda:0";
  int reps = 7;
  double peak_gbs = 0.0;
  std::string only;
};

constexpr size_t kRotationBytes = size_t(256) << 20;  // past any current GPU's last-level cache
constexpr int kMinCalls = 64;

// Copies of a case's data that together exceed the device's cache.
int copies_for(size_t bytes) { return int(std::clamp<size_t>((kRotationBytes + bytes - 1) / bytes, 1, 256)); }

class Bench {
 public:
  explicit Bench(const Options& o) : options_(o), backend_(create_backend(parse_device(o.device))) {}

  void linears();
  void attention();

 private:
  template <typename T>
  T* upload(const std::vector<T>& host) {
    buffers_.emplace_back(*backend_, std::max<size_t>(host.size() * sizeof(T), 1));
    backend_->copy_host_to_device(buffers_.back().data(), host.data(), host.size() * sizeof(T), backend_->default_stream());
    return buffers_.back().template data_as<T>();
  }
  // Median microseconds a call, `calls` calls of launch(i) a replay.
  double time_calls(int calls, const std::function<void(int)>& launch);
  void report(const std::string& fields, double us, double bytes) const;

  Options options_;
  std::unique_ptr<Backend> backend_;
  std::vector<DeviceBuffer> buffers_;
  std::mt19937 rng_{7};
};

double Bench::time_calls(int calls, const std::function<void(int)>& launch) {
  Stream& stream = backend_->default_stream();
  auto all = [&] {
    for (int i = 0; i < calls; ++i) launch(i);
  };
  all();  // sizes scratch buffers and loads code before any recording
  stream.synchronize();
  std::unique_ptr<Recording> recording = backend_->record(stream, all);
  std::vector<double> us;
  for (int r = 0; r < options_.reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (recording) recording->replay(stream);
    else all();
    stream.synchronize();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls);
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

void Bench::report(const std::string& fields, double us, double bytes) const {
  const double gbs = bytes / us / 1e3;
  std::printf("{%s, \"us\": %.2f, \"bytes\": %.0f, \"gb_s\": %.1f", fields.c_str(), us, bytes, gbs);
  if (options_.peak_gbs > 0) std::printf(", \"fraction_of_peak\": %.3f", gbs / options_.peak_gbs);
  std::printf("}\n");
  std::fflush(stdout);
}

struct LinearShape {
  const char* layer;
  int64_t rows, cols;
};

// Layers of SmolLM2-135M, Gemma-3-270M and Qwen2.5-Coder-0.5B.
const LinearShape kLinearShapes[] = {{"smollm2.q", 576, 576},   {"smollm2.gate", 1536, 576}, {"smollm2.down", 576, 1536},
                                     {"gemma.gate", 2048, 640}, {"qwen.q", 896, 896},        {"qwen.up", 4864, 896},
                                     {"qwen.down", 896, 4864},  {"qwen.output", 151936, 896}};
const DType kLinearFormats[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kF16};

void Bench::linears() {
  for (const LinearShape& shape : kLinearShapes) {
    for (DType dtype : kLinearFormats) {
      const DTypeInfo& info = dtype_info(dtype);
      if (shape.cols % info.block_elems != 0) continue;
      const size_t bytes = size_t(shape.rows * shape.cols / info.block_elems) * info.block_bytes;
      const int copies = copies_for(bytes);
      std::vector<std::unique_ptr<PreparedLinear>> weights;
      {
        const std::vector<uint8_t> blocks = test::random_blocks(rng_, dtype, shape.rows * shape.cols);
        for (int c = 0; c < copies; ++c) {
          weights.push_back(backend_->prepare_linear(linear_from_tensor(shape.layer, dtype, blocks.data(), shape.rows, shape.cols)));
        }
      }
      for (int64_t tokens : {1, 4, 16}) {
        const float* x = upload(test::normal_values(rng_, size_t(tokens * shape.cols)));
        float* y = upload(std::vector<float>(size_t(tokens * shape.rows)));
        const double us = time_calls(std::max(kMinCalls, copies), [&](int i) {
          const LinearOutput out{weights[size_t(i % copies)].get(), y};
          backend_->kernels().linear({x, tokens, &out, 1}, backend_->default_stream());
        });
        char fields[256];
        std::snprintf(fields, sizeof fields, "\"op\": \"linear\", \"layer\": \"%s\", \"format\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"tokens\": %lld",
                      shape.layer, std::string(dtype_name(dtype)).c_str(), (long long)shape.rows, (long long)shape.cols,
                      (long long)tokens);
        report(fields, us, double(bytes));
      }
      buffers_.clear();
    }
  }
}

struct HeadLayout {
  const char* model;
  int heads, kv_heads, dim;
};
const HeadLayout kHeadLayouts[] = {{"smollm2", 9, 3, 64}, {"qwen2.5", 14, 2, 64}, {"gemma3", 4, 1, 256}};
constexpr int kPage = 16;

void Bench::attention() {
  for (const HeadLayout& layout : kHeadLayouts) {
    for (int context : {512, 4096}) {
      for (int batch : {1, 8}) {
        // Sequence s: `context` keys on its own pages, one query at the last position.
        const int pages_per_seq = (context + kPage - 1) / kPage;
        std::vector<int32_t> query_start, positions(size_t(batch), context - 1), kv_len(size_t(batch), context), indptr, indices;
        for (int s = 0; s <= batch; ++s) {
          query_start.push_back(s);
          indptr.push_back(s * pages_per_seq);
        }
        for (int p = 0; p < batch * pages_per_seq; ++p) indices.push_back(p);
        const ops::AttentionBatch ab{batch, upload(query_start), upload(positions), upload(kv_len), upload(indptr), upload(indices)};
        auto plan = backend_->create_attention_plan(batch, batch, layout.kv_heads);
        backend_->kernels().plan_attention({ab, batch, layout.kv_heads, plan.get()}, backend_->default_stream());
        const int64_t pool_elems = int64_t(batch) * pages_per_seq * kPage * layout.kv_heads * layout.dim;
        const double read = double(batch) * context * layout.kv_heads * layout.dim * 2 /* K and V */ * 2 /* f16 */;
        const int copies = copies_for(size_t(pool_elems) * 4);
        std::vector<ops::PagedKv> pools;
        const std::vector<uint8_t> cache = test::random_blocks(rng_, DType::kF16, pool_elems);
        for (int c = 0; c < copies; ++c) {
          pools.push_back({upload(cache), upload(cache), DType::kF16, kPage, layout.kv_heads, layout.dim});
        }
        const float* q = upload(test::normal_values(rng_, size_t(batch) * layout.heads * layout.dim));
        float* out = upload(std::vector<float>(size_t(batch) * layout.heads * layout.dim));
        ops::AttentionParams params;
        params.scale = 1.0f / std::sqrt(float(layout.dim));
        const double us = time_calls(std::max(kMinCalls, copies), [&](int i) {
          backend_->kernels().attention({plan.get(), q, layout.heads, pools[size_t(i % copies)], params, out},
                                        backend_->default_stream());
        });
        char fields[192];
        std::snprintf(fields, sizeof fields, "\"op\": \"attention\", \"layout\": \"%s\", \"context\": %d, \"batch\": %d",
                      layout.model, context, batch);
        report(fields, us, read);
        buffers_.clear();
      }
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--device") o.device = value;
    else if (arg == "--reps") o.reps = std::max(1, std::stoi(value));
    else if (arg == "--peak-gbs") o.peak_gbs = std::stod(value);
    else if (arg == "--only" && (value == "linear" || value == "attention")) o.only = value;
    else if (arg == "--only") throw std::invalid_argument("--only takes linear or attention, not " + value);
    else throw std::invalid_argument("unknown option " + arg);
  }
  return o;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  try {
    const tessera::bench::Options options = tessera::bench::parse(argc, argv);
    tessera::bench::Bench bench(options);
    if (options.only.empty() || options.only == "linear") bench.linears();
    if (options.only.empty() || options.only == "attention") bench.attention();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_accel_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
