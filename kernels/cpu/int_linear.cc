#include "kernels/cpu/int_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/error.h"
#include "quant/int_weights.h"

namespace tessera::cpu {
namespace {

// Per-channel rows are summed in spans no longer than this, so no int32
// lane can overflow: 32767 * 128 per product, at most 4096 / 8 products a
// lane with the narrowest (AVX2) lanes.
constexpr int64_t kMaxSpan = 4096;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

IntLinearKernels select_int_kernels(const IsaFeatures& isa) {
  const bool avx2 = isa.avx2 && isa.fma;
  if (avx2 && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni) return avx512_int_kernels();
  if (avx2) return avx2_int_kernels();
  return scalar_int_kernels();
}

IntLinear::IntLinear(const QuantizedLinear& desc, const IsaFeatures& isa)
    : rows_(desc.rows), cols_(desc.cols), kernels_(select_int_kernels(isa)) {
  quant::validate_int_linear(desc);
  bits_ = desc.scheme.storage == DType::kI8 ? 8 : 4;
  int8_activations_ = desc.scheme.activation == ActivationPolicy::kDynamicInt8Token;
  if (int8_activations_ && desc.scheme.group_size != desc.cols) {
    throw Error("weight '" + desc.name + "': int8 activations need one scale per output channel");
  }
  const int64_t group = desc.scheme.group_size;
  const bool per_channel = group == cols_;
  layout_.padded_cols = round_up(cols_, 64);
  layout_.span = per_channel ? std::min(cols_, kMaxSpan) : group;
  layout_.n_spans = quant::group_count(cols_, layout_.span);
  if (desc.input_order) {
    input_order_.assign(desc.input_order, desc.input_order + cols_);
    std::vector<bool> seen(size_t(cols_), false);
    for (int32_t i : input_order_) {
      if (i < 0 || i >= cols_ || seen[size_t(i)]) throw Error("weight '" + desc.name + "': input order is not a permutation");
      seen[size_t(i)] = true;
    }
  }
  pack_rows(desc);
}

void IntLinear::pack_rows(const QuantizedLinear& desc) {
  const int64_t padded = layout_.padded_cols, n_groups = quant::group_count(cols_, desc.scheme.group_size);
  row_bytes_ = size_t(bits_ == 8 ? padded : padded / 2);
  packed_ = AlignedBuffer(row_bytes_ * size_t(rows_));
  std::memset(packed_.data(), 0, packed_.size());
  scales_.resize(size_t(rows_ * layout_.n_spans));
  if (bits_ == 4) zeros_.resize(size_t(rows_ * layout_.n_spans));
  if (int8_activations_) row_sums_.resize(size_t(rows_));
  const auto* scales = static_cast<const float*>(desc.scales);
  const auto* zeros = static_cast<const int8_t*>(desc.zero_points);
  for (int64_t r = 0; r < rows_; ++r) {
    const auto* src = static_cast<const uint8_t*>(desc.data) + uint64_t(r) * desc.row_stride;
    uint8_t* dst = packed_.data_as<uint8_t>() + size_t(r) * row_bytes_;
    for (int64_t s = 0; s < layout_.n_spans; ++s) {
      // Spans are the groups, or slices of the row's single group.
      const int64_t g = n_groups == 1 ? 0 : s;
      const float scale = scales[r * n_groups + g];
      if (!std::isfinite(scale)) throw Error("weight '" + desc.name + "': scale of row " + std::to_string(r) + " is not finite");
      scales_[size_t(r * layout_.n_spans + s)] = scale;
      if (bits_ == 4) {
        const int zero = zeros ? zeros[r * n_groups + g] : 0;
        // [-8, 7] from 4-bit codes; GPTQ's stored zero plus one reaches 8.
        if (zero < -8 || zero > 8) throw Error("weight '" + desc.name + "': zero point outside [-8, 8]");
        zeros_[size_t(r * layout_.n_spans + s)] = int16_t(zero + 8);  // unsigned-nibble domain
      }
    }
    if (bits_ == 8) {
      std::memcpy(dst, src, size_t(cols_));
      if (int8_activations_) {
        int32_t sum = 0;
        for (int64_t c = 0; c < cols_; ++c) sum += int8_t(src[c]);
        row_sums_[size_t(r)] = sum;
      }
      continue;
    }
    for (int64_t c = 0; c < cols_; ++c) {
      const auto u = uint8_t(quant::int4_at(src, c) + 8);
      const int64_t chunk = c / 64, j = c % 64;
      dst[chunk * 32 + j % 32] |= j < 32 ? u : uint8_t(u << 4);
    }
  }
}

IntRowTask IntLinear::row_task(int64_t row, int n_rows) const {
  IntRowTask t{};
  t.w = packed_.data_as<uint8_t>() + size_t(row) * row_bytes_;
  t.w_stride = row_bytes_;
  t.scales = scales_.data() + row * layout_.n_spans;
  t.zeros = zeros_.empty() ? nullptr : zeros_.data() + row * layout_.n_spans;
  t.row_sums = row_sums_.empty() ? nullptr : row_sums_.data() + row;
  t.n_rows = n_rows;
  return t;
}

void quantize_int_activations(std::span<const IntLinear* const> weights, const float* x, int64_t n_tokens,
                              IntActivations& out) {
  bool need16 = false, need8 = false, offset = false;
  int64_t cols = 0, padded = 0;
  for (const IntLinear* w : weights) {
    (w->int8_activations() ? need8 : need16) = true;
    offset = offset || (w->int8_activations() && w->kernels().offset_int8_activations);
    cols = w->cols();
    padded = w->layout().padded_cols;
  }
  out.padded_cols = padded;
  out.n_tokens = n_tokens;
  out.sum_span = 0;
  const size_t n = size_t(n_tokens * padded);
  if (need16) {
    out.x16.assign(n, 0);
    out.scales16.resize(size_t(n_tokens));
  }
  if (need8) {
    out.x8.assign(n, int8_t(offset ? -128 : 0));
    out.scales8.resize(size_t(n_tokens));
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = x + t * cols;
    float amax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(row[c]));
    if (need16) {
      const float inv = amax > 0.0f ? 32767.0f / amax : 0.0f;
      int16_t* q = out.x16.data() + t * padded;
      for (int64_t c = 0; c < cols; ++c) q[c] = int16_t(std::lrintf(row[c] * inv));
      out.scales16[size_t(t)] = amax / 32767.0f;
    }
    if (need8) {
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      int8_t* q = out.x8.data() + t * padded;
      for (int64_t c = 0; c < cols; ++c) {
        const long v = std::lrintf(row[c] * inv);
        q[c] = offset ? int8_t(uint8_t(v + 128)) : int8_t(v);
      }
      out.scales8[size_t(t)] = amax / 127.0f;
    }
  }
}

namespace {

void compute_span_sums(IntActivations& x, const IntRowLayout& layout) {
  if (x.sum_span == layout.span) return;
  x.sum_span = layout.span;
  x.span_sums.assign(size_t(x.n_tokens * layout.n_spans), 0);
  for (int64_t t = 0; t < x.n_tokens; ++t) {
    const int16_t* row = x.x16.data() + t * x.padded_cols;
    for (int64_t s = 0; s < layout.n_spans; ++s) {
      const int64_t begin = s * layout.span, end = s + 1 == layout.n_spans ? x.padded_cols : begin + layout.span;
      int32_t sum = 0;
      for (int64_t c = begin; c < end; ++c) sum += row[c];
      x.span_sums[size_t(t * layout.n_spans + s)] = sum;
    }
  }
}

void int_matmul_in_order(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool);

// The activations with their columns in the weight's stored order, into `out`.
void reorder_inputs(const IntActivations& x, const std::vector<int32_t>& order, int64_t n_tokens, IntActivations& out) {
  out.padded_cols = x.padded_cols;
  out.n_tokens = n_tokens;
  out.sum_span = 0;
  out.scales16 = x.scales16;
  out.x16.assign(x.x16.size(), 0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int16_t* src = x.x16.data() + t * x.padded_cols;
    int16_t* dst = out.x16.data() + t * x.padded_cols;
    for (size_t c = 0; c < order.size(); ++c) dst[c] = src[order[c]];
  }
}

}  // namespace

void int_matmul(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (!w.input_order().empty()) {
    if (!x.reordered) x.reordered = std::make_unique<IntActivations>();
    reorder_inputs(x, w.input_order(), n_tokens, *x.reordered);
    return int_matmul_in_order(w, *x.reordered, n_tokens, y, pool);
  }
  int_matmul_in_order(w, x, n_tokens, y, pool);
}

namespace {

void int_matmul_in_order(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.bits() == 4) compute_span_sums(x, w.layout());
  const bool a8 = w.int8_activations();
  const IntRowFn fn = a8 ? w.kernels().a8_w8 : w.bits() == 8 ? w.kernels().a16_w8 : w.kernels().a16_w4;
  const void* xs = a8 ? static_cast<const void*>(x.x8.data()) : static_cast<const void*>(x.x16.data());
  const float* x_scales = a8 ? x.scales8.data() : x.scales16.data();
  const int64_t rows = w.rows(), padded = x.padded_cols;
  // Rows in blocks small enough that a block's weights stay in L1/L2 while
  // every tile of tokens passes over them.
  constexpr int64_t kRowBlock = 16;
  // With one or two tokens the product streams the weights from memory: one
  // row at a time keeps the reads sequential, which the prefetchers follow;
  // interleaving rows pays only where the arithmetic is the limit.
  const int row_tile = n_tokens <= 2 ? 1 : kIntRowTile;
  pool.parallel_for(rows, kRowBlock, [&](int, int64_t begin, int64_t end) {
    for (int64_t r0 = begin; r0 < end; r0 += kRowBlock) {
      const int64_t r1 = std::min(end, r0 + kRowBlock);
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kIntTokenTile) {
        const int tile = int(std::min<int64_t>(kIntTokenTile, n_tokens - t0));
        for (int64_t r = r0; r < r1; r += row_tile) {
          IntRowTask task = w.row_task(r, int(std::min<int64_t>(row_tile, r1 - r)));
          task.x = a8 ? static_cast<const void*>(static_cast<const int8_t*>(xs) + t0 * padded)
                      : static_cast<const void*>(static_cast<const int16_t*>(xs) + t0 * padded);
          task.x_stride = padded;
          task.x_scales = x_scales + t0;
          task.x_span_sums = w.bits() == 4 ? x.span_sums.data() + t0 * w.layout().n_spans : nullptr;
          task.n_tokens = tile;
          task.y = y + t0 * rows + r;
          task.y_stride = rows;
          fn(w.layout(), task);
        }
      }
    }
  });
}

}  // namespace

}  // namespace tessera::cpu
