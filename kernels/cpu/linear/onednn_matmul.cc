#include "kernels/cpu/linear/onednn_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "engine/core/error.h"
#include "engine/tensor/half.h"

namespace tessera::cpu {

// One primitive per batch size, made on first use (a step has few distinct
// sizes); the engine and stream live as long as the weight.
struct OnednnMatmul::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  const void* weights;
  dnnl::memory::data_type type;  // of the weights and of the activations fed to them
  int64_t rows, cols;
  bool round_to_bf16 = false;    // bf16 weights: activations rounded to bf16 first
  std::vector<uint16_t> bf16_acts;
  std::vector<float> widened;    // (rows, cols): bf16 weights as f32, where no bf16 matmul exists
  std::vector<float> rounded_acts;
  std::mutex mutex;  // guards the primitive cache
  std::map<int64_t, dnnl::matmul> primitives;

  dnnl::matmul& primitive(int64_t m) {
    auto it = primitives.find(m);
    if (it != primitives.end()) return it->second;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc src({m, cols}, type, tag::ab);
    const dnnl::memory::desc wei({cols, rows}, type, tag::ba);  // W stored [rows][cols] is Wᵀ in "ba"
    const dnnl::memory::desc dst({m, rows}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    return primitives.emplace(m, dnnl::matmul(pd)).first->second;
  }
};

OnednnMatmul::OnednnMatmul(const void* weights, bool bf16, int64_t rows, int64_t cols) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.weights = weights;
  s.type = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  s.rows = rows;
  s.cols = cols;
  s.round_to_bf16 = bf16;
  if (!bf16) return;
  try {
    s.primitive(1);
  } catch (const dnnl::error&) {
    // No bf16 matmul on this CPU: the same products in f32.
    const auto* w = static_cast<const uint16_t*>(weights);
    s.widened.resize(size_t(rows) * size_t(cols));
    for (size_t i = 0; i < s.widened.size(); ++i) s.widened[i] = bf16_to_f32(w[i]);
    s.weights = s.widened.data();
    s.type = dnnl::memory::data_type::f32;
    s.primitives.clear();
  }
}

OnednnMatmul::~OnednnMatmul() = default;

void OnednnMatmul::run(const float* x, int64_t n_tokens, float* y) const {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  try {
    dnnl::matmul& mm = s.primitive(n_tokens);
    void* src_data = const_cast<float*>(x);
    if (s.type == dt::bf16) {
      s.bf16_acts.resize(size_t(n_tokens * s.cols));
      for (size_t i = 0; i < s.bf16_acts.size(); ++i) s.bf16_acts[i] = f32_to_bf16(x[i]);
      src_data = s.bf16_acts.data();
    } else if (s.round_to_bf16) {
      s.rounded_acts.resize(size_t(n_tokens * s.cols));
      for (size_t i = 0; i < s.rounded_acts.size(); ++i) s.rounded_acts[i] = bf16_to_f32(f32_to_bf16(x[i]));
      src_data = s.rounded_acts.data();
    }
    dnnl::memory src({{n_tokens, s.cols}, s.type, tag::ab}, s.engine, src_data);
    dnnl::memory wei({{s.cols, s.rows}, s.type, tag::ba}, s.engine, const_cast<void*>(s.weights));
    dnnl::memory dst({{n_tokens, s.rows}, dt::f32, tag::ab}, s.engine, y);
    mm.execute(s.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    s.stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN matmul: ") + e.what());
  }
}

}  // namespace tessera::cpu
