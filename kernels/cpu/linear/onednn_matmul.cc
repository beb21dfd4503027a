#include "kernels/cpu/linear/onednn_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/tensor/half.h"

namespace tessera::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Rows of a bf16 matrix widened per oneDNN call where it has no bf16
// matmul: 256 rows of a 4,096-wide matrix are 4 MiB of f32, which stays in
// the last-level cache while the tile is multiplied.
constexpr int64_t kWidenRows = 256;
// Fewer tokens than this go to the bf16 dot products: widening a tile costs
// about what multiplying it by this many tokens does.
constexpr int64_t kWidenMinTokens = 16;

// y (m, n) = x (m, k) · Wᵀ, W stored (n, k) row-major ("ba" as the (k, n)
// operand); y's rows `ldy` floats apart.
dnnl::matmul::primitive_desc matmul_desc(const dnnl::engine& engine, dt type, int64_t m, int64_t k, int64_t n, int64_t ldy) {
  const dnnl::memory::desc src({m, k}, type, tag::ab);
  const dnnl::memory::desc wei({k, n}, type, tag::ba);
  const dnnl::memory::desc dst({m, n}, dt::f32, dnnl::memory::dims{ldy, 1});
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), engine);
}

}  // namespace

// One primitive per (tokens, weight rows) shape, made on first use (a step
// has few distinct sizes); the engine and stream live as long as the weight.
struct OnednnMatmul::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  const void* weights;
  dt type;  // of the weights and of the activations fed to them, as multiplied
  int64_t rows, cols;
  bool round_to_bf16 = false;  // bf16 weights: activations rounded to bf16 first
  bool widen_tiles = false;    // bf16 weights, f32 products on tiles widened per call
  std::vector<uint16_t> bf16_acts;
  std::vector<float> rounded_acts;
  std::vector<float> tile;  // (kWidenRows, cols): one tile of bf16 weights as f32
  std::mutex mutex;         // guards the primitive cache and the scratch
  std::map<std::pair<int64_t, int64_t>, dnnl::matmul> primitives;

  dnnl::matmul& primitive(int64_t m, int64_t n) {
    const auto key = std::make_pair(m, n);
    auto it = primitives.find(key);
    if (it != primitives.end()) return it->second;
    return primitives.emplace(key, dnnl::matmul(matmul_desc(engine, type, m, cols, n, rows))).first->second;
  }

  // The activations as multiplied: bf16 for a bf16 primitive, bf16-rounded
  // f32 for f32 products of bf16 weights, else x itself.
  void* activations(const float* x, int64_t n_tokens) {
    if (type == dt::bf16) {
      bf16_acts.resize(size_t(n_tokens * cols));
      for (size_t i = 0; i < bf16_acts.size(); ++i) bf16_acts[i] = f32_to_bf16(x[i]);
      return bf16_acts.data();
    }
    if (!round_to_bf16) return const_cast<float*>(x);
    rounded_acts.resize(size_t(n_tokens * cols));
    for (size_t i = 0; i < rounded_acts.size(); ++i) rounded_acts[i] = bf16_to_f32(f32_to_bf16(x[i]));
    return rounded_acts.data();
  }

  void multiply(void* src_data, const void* wei_data, int64_t m, int64_t n, float* y) {
    dnnl::memory src({{m, cols}, type, tag::ab}, engine, src_data);
    dnnl::memory wei({{cols, n}, type, tag::ba}, engine, const_cast<void*>(wei_data));
    dnnl::memory dst({{m, n}, dt::f32, dnnl::memory::dims{rows, 1}}, engine, y);
    primitive(m, n).execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    stream.wait();
  }
};

bool OnednnMatmul::has_bf16_matmul() {
  static const bool available = [] {
    try {
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      matmul_desc(engine, dt::bf16, 1, 32, 32, 32);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

OnednnMatmul::OnednnMatmul(const void* weights, bool bf16, int64_t rows, int64_t cols, bool bf16_products)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.weights = weights;
  s.rows = rows;
  s.cols = cols;
  s.round_to_bf16 = bf16;
  s.widen_tiles = bf16 && !(bf16_products && has_bf16_matmul());
  s.type = bf16 && !s.widen_tiles ? dt::bf16 : dt::f32;
  if (s.widen_tiles) s.tile.resize(size_t(std::min(rows, kWidenRows) * cols));
}

OnednnMatmul::~OnednnMatmul() = default;

int64_t OnednnMatmul::min_tokens() const { return state_->widen_tiles ? kWidenMinTokens : 1; }

void OnednnMatmul::run(const float* x, int64_t n_tokens, float* y) const {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  try {
    void* src = s.activations(x, n_tokens);
    if (!s.widen_tiles) return s.multiply(src, s.weights, n_tokens, s.rows, y);
    const auto* w = static_cast<const uint16_t*>(s.weights);
    for (int64_t r0 = 0; r0 < s.rows; r0 += kWidenRows) {
      const int64_t n = std::min(kWidenRows, s.rows - r0);
      const uint16_t* from = w + r0 * s.cols;
      for (int64_t i = 0; i < n * s.cols; ++i) s.tile[size_t(i)] = bf16_to_f32(from[i]);
      s.multiply(src, s.tile.data(), n_tokens, n, y + r0);
    }
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN matmul: ") + e.what());
  }
}

}  // namespace tessera::cpu
