#include "kernels/cpu/onednn_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/error.h"

namespace tessera::cpu {

// One primitive per batch size, made on first use (a step has few distinct
// sizes); the engine and stream live as long as the weight.
struct OnednnMatmul::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  const float* weights;
  int64_t rows, cols;
  std::mutex mutex;  // guards the primitive cache
  std::map<int64_t, dnnl::matmul> primitives;

  dnnl::matmul& primitive(int64_t m) {
    auto it = primitives.find(m);
    if (it != primitives.end()) return it->second;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc src({m, cols}, dt::f32, tag::ab);
    const dnnl::memory::desc wei({cols, rows}, dt::f32, tag::ba);  // W stored [rows][cols] is Wᵀ in "ba"
    const dnnl::memory::desc dst({m, rows}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    return primitives.emplace(m, dnnl::matmul(pd)).first->second;
  }
};

OnednnMatmul::OnednnMatmul(const float* weights, int64_t rows, int64_t cols) : state_(std::make_unique<State>()) {
  state_->weights = weights;
  state_->rows = rows;
  state_->cols = cols;
}

OnednnMatmul::~OnednnMatmul() = default;

void OnednnMatmul::run(const float* x, int64_t n_tokens, float* y) const {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  try {
    dnnl::matmul& mm = s.primitive(n_tokens);
    dnnl::memory src({{n_tokens, s.cols}, dt::f32, tag::ab}, s.engine, const_cast<float*>(x));
    dnnl::memory wei({{s.cols, s.rows}, dt::f32, tag::ba}, s.engine, const_cast<float*>(s.weights));
    dnnl::memory dst({{n_tokens, s.rows}, dt::f32, tag::ab}, s.engine, y);
    mm.execute(s.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    s.stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN matmul: ") + e.what());
  }
}

}  // namespace tessera::cpu
