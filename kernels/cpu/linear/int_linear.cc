#include "kernels/cpu/linear/int_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "quant/int_weights.h"

namespace tessera::cpu {
namespace {

// Per-channel rows are summed in spans no longer than this, so no int32
// lane can overflow: 32767 * 128 per product, at most 4096 / 8 products a
// lane with the narrowest (AVX2) lanes.
constexpr int64_t kMaxSpan = 4096;
// Row groups' spans: short enough that a span's exact sum fits in int32
// (32767 * 128 * 512 < 2^31).
constexpr int64_t kGroupMaxSpan = 512;
// Tokens a thread takes at least when activations are prepared in parallel:
// below this a call's few rows are not worth waking the pool.
constexpr int64_t kParallelTokens = 32;
// From this many tokens the row groups go through AMX tiles (a partial tile
// of tokens costs as much as a full one).
constexpr int64_t kAmxMinTokens = 8;
// Up to this many tokens, A16 row groups go through IntGroupKernels::a16_few_tokens where set.
constexpr int64_t kFewTokens = 2;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

bool has_avx512_vnni(const IsaFeatures& isa) {
  return isa.avx2 && isa.fma && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni;
}

}  // namespace

IntLinearKernels select_int_kernels(const IsaFeatures& isa) {
  const bool avx2 = isa.avx2 && isa.fma;
  if (avx2 && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni) return avx512_int_kernels();
  if (avx2) return avx2_int_kernels();
  return scalar_int_kernels();
}

IntLinear::IntLinear(const QuantizedLinear& desc, const IsaFeatures& isa, IntLayout layout, HugePageArena* arena)
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
  // 4-bit groups of 32 columns are the two nibble halves of a 64-column chunk.
  const bool group_in_chunks = group % kGroupChunk == 0 || (bits_ == 4 && group == kGroupChunk / 2);
  const bool groups_fit = isa.avx2 && isa.fma && (per_channel || group_in_chunks);
  if (layout == IntLayout::kRowGroups && !groups_fit) {
    throw Error("weight '" + desc.name + "': row groups need AVX2 and groups of a multiple of 64 columns (or 32 at 4 bits)");
  }
  row_groups_ = groups_fit && layout != IntLayout::kRows;
  if (!row_groups_) {
    pack_rows(desc, arena);
    return;
  }
  group_kernels_ = !has_avx512_vnni(isa) ? avx2_group_kernels() : isa.amx_int8 ? amx_group_kernels() : avx512_group_kernels();
  // Every instruction set's row groups give the same bits, so a call may
  // take whichever is faster: for one or two tokens, read from memory, the
  // AVX2 kernels measured ahead of the AVX-512 ones
  // (docs/performance-forced-avx2.md).
  if (has_avx512_vnni(isa)) group_kernels_.a16_few_tokens = avx2_group_kernels().a16;
  pack_row_groups(desc, arena);
}

uint8_t* IntLinear::allocate_packed(size_t bytes, HugePageArena* arena) {
  if (arena) {
    if (HugePageArena::Space space = arena->reserve(bytes); space.data) {
      arena_chunk_ = std::move(space.chunk);
      weights_ = space.data;
      return space.data;  // zero: fresh anonymous memory
    }
  }
  packed_ = AlignedBuffer(bytes);
  weights_ = packed_.data_as<uint8_t>();
  std::memset(packed_.data(), 0, bytes);
  return packed_.data_as<uint8_t>();
}

void pack_row_group_block(int bits, const int8_t* codes, uint8_t* block) {
  for (int q = 0; q < (bits == 8 ? 16 : 8); ++q) {
    for (int n = 0; n < kRowGroup; ++n) {
      for (int j = 0; j < 4; ++j) {
        const int8_t* row = codes + n * kGroupChunk;
        uint8_t& out = block[q * 64 + n * 4 + j];
        out = bits == 8 ? uint8_t(row[4 * q + j]) : uint8_t(row[4 * q + j] | (row[32 + 4 * q + j] << 4));
      }
    }
  }
}

void IntLinear::pack_row_groups(const QuantizedLinear& desc, HugePageArena* arena) {
  const int64_t n_qgroups = quant::group_count(cols_, desc.scheme.group_size), padded = layout_.padded_cols;
  IntGroupLayout& l = group_layout_;
  l.bits = bits_;
  l.int8_activations = int8_activations_;
  l.padded_cols = padded;
  l.chunks = padded / kGroupChunk;
  l.span = int8_activations_ ? padded : n_qgroups == 1 ? std::min(padded, kGroupMaxSpan) : desc.scheme.group_size;
  l.n_spans = int8_activations_ ? 1 : quant::group_count(cols_, l.span);
  l.block_bytes = bits_ == 8 ? 1024 : 512;
  const int64_t groups = (rows_ + kRowGroup - 1) / kRowGroup;
  uint8_t* packed = allocate_packed(size_t(groups * l.chunks) * l.block_bytes, arena);
  const size_t entries = size_t(groups * l.n_spans * kRowGroup);
  group_scales_.assign(entries, 0.0f);
  group_offsets_.assign(entries, 0);
  if (bits_ == 4) group_zeros_.assign(entries, 0);
  const auto* scales = static_cast<const float*>(desc.scales);
  const auto* zeros = static_cast<const int8_t*>(desc.zero_points);
  // One group at a time: codes (16, padded) row-major, zero beyond the real
  // rows and columns (a whole weight's codes would double an output head).
  std::vector<int8_t> codes(size_t(kRowGroup * padded));
  std::vector<int8_t> tile(size_t(kRowGroup * kGroupChunk));
  for (int64_t g = 0; g < groups; ++g) {
    std::fill(codes.begin(), codes.end(), int8_t(0));
    for (int64_t r = g * kRowGroup; r < std::min(rows_, (g + 1) * kRowGroup); ++r) {
      const auto* src = static_cast<const uint8_t*>(desc.data) + uint64_t(r) * desc.row_stride;
      int8_t* dst = codes.data() + (r % kRowGroup) * padded;
      if (bits_ == 8) std::memcpy(dst, src, size_t(cols_));
      else quant::int4_row(src, cols_, 8, dst);  // unsigned nibbles
      group_row_spans(desc, r, dst, n_qgroups, scales, zeros);
    }
    for (int64_t c = 0; c < l.chunks; ++c) {
      for (int n = 0; n < kRowGroup; ++n) {
        std::memcpy(tile.data() + n * kGroupChunk, codes.data() + n * padded + c * kGroupChunk, kGroupChunk);
      }
      pack_row_group_block(bits_, tile.data(), packed + size_t(g * l.chunks + c) * l.block_bytes);
    }
  }
}

void IntLinear::group_row_spans(const QuantizedLinear& desc, int64_t r, const int8_t* codes, int64_t n_qgroups,
                                const float* scales, const int8_t* zeros) {
  const IntGroupLayout& l = group_layout_;
  for (int64_t s = 0; s < l.n_spans; ++s) {
    const int64_t qg = n_qgroups == 1 ? 0 : s, begin = s * l.span, end = std::min(begin + l.span, l.padded_cols);
    const float scale = scales[r * n_qgroups + qg];
    if (!std::isfinite(scale)) throw Error("weight '" + desc.name + "': scale of row " + std::to_string(r) + " is not finite");
    const size_t at = size_t((r / kRowGroup * l.n_spans + s) * kRowGroup + r % kRowGroup);
    group_scales_[at] = scale;
    int64_t sum = 0;
    for (int64_t c = begin; c < end; ++c) sum += codes[c];
    // Wrapping: the kernels' int32 sums wrap the same way and S itself fits.
    group_offsets_[at] = int32_t(uint32_t(uint64_t(sum) * (int8_activations_ ? 128u : 32768u)));
    if (bits_ == 4) {
      const int zero = zeros ? zeros[r * n_qgroups + qg] : 0;
      if (zero < -8 || zero > 8) throw Error("weight '" + desc.name + "': zero point outside [-8, 8]");
      group_zeros_[at] = zero + 8;
    }
  }
}

IntGroupTask IntLinear::group_task(int64_t group, int64_t n) const {
  const IntGroupLayout& l = group_layout_;
  const size_t at = size_t(group * l.n_spans * kRowGroup);
  IntGroupTask t{};
  t.w = weights_ + size_t(group * l.chunks) * l.block_bytes;
  t.scales = group_scales_.data() + at;
  t.offsets = group_offsets_.data() + at;
  t.zeros = group_zeros_.empty() ? nullptr : group_zeros_.data() + at;
  t.groups = n;
  t.rows = rows_ - group * kRowGroup;
  return t;
}

void IntLinear::pack_rows(const QuantizedLinear& desc, HugePageArena* arena) {
  const int64_t padded = layout_.padded_cols, n_groups = quant::group_count(cols_, desc.scheme.group_size);
  row_bytes_ = size_t(bits_ == 8 ? padded : padded / 2);
  uint8_t* packed = allocate_packed(row_bytes_ * size_t(rows_), arena);
  scales_.resize(size_t(rows_ * layout_.n_spans));
  if (bits_ == 4) zeros_.resize(size_t(rows_ * layout_.n_spans));
  if (int8_activations_) row_sums_.resize(size_t(rows_));
  const auto* scales = static_cast<const float*>(desc.scales);
  const auto* zeros = static_cast<const int8_t*>(desc.zero_points);
  for (int64_t r = 0; r < rows_; ++r) {
    const auto* src = static_cast<const uint8_t*>(desc.data) + uint64_t(r) * desc.row_stride;
    uint8_t* dst = packed + size_t(r) * row_bytes_;
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
  t.w = weights_ + size_t(row) * row_bytes_;
  t.w_stride = row_bytes_;
  t.scales = scales_.data() + row * layout_.n_spans;
  t.zeros = zeros_.empty() ? nullptr : zeros_.data() + row * layout_.n_spans;
  t.row_sums = row_sums_.empty() ? nullptr : row_sums_.data() + row;
  t.n_rows = n_rows;
  return t;
}

namespace {

void quantize_int_row(const IntRowQuantizeArgs& a) {
  float amax = 0.0f;
  for (int64_t c = 0; c < a.cols; ++c) amax = std::max(amax, std::fabs(a.x[c]));
  if (a.q16) {
    const float inv = amax > 0.0f ? 32767.0f / amax : 0.0f;
    for (int64_t c = 0; c < a.cols; ++c) a.q16[c] = int16_t(std::lrintf(a.x[c] * inv));
    *a.scale16 = amax / 32767.0f;
  }
  if (a.q8) {
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int64_t c = 0; c < a.cols; ++c) {
      const long v = std::lrintf(a.x[c] * inv);
      a.q8[c] = a.offset8 ? int8_t(uint8_t(v + 128)) : int8_t(v);
    }
    *a.scale8 = amax / 127.0f;
  }
}

}  // namespace

void quantize_int_activations(std::span<const IntLinear* const> weights, const float* x, int64_t n_tokens,
                              IntActivations& out, ThreadPool* pool) {
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
  out.split = false;
  // Rows are written below up to `cols`; the columns after them and the
  // padding rows hold zeros (int8 offset: -128, the code of zero).
  const size_t n = size_t(round_up(n_tokens, kTokenBlock) * padded), real = size_t(n_tokens * padded);
  const int8_t zero8 = int8_t(offset ? -128 : 0);
  if (need16) {
    out.x16.resize(n);
    std::fill(out.x16.begin() + std::ptrdiff_t(real), out.x16.end(), int16_t(0));
    out.scales16.resize(size_t(n_tokens));
  }
  if (need8) {
    out.x8.resize(n);
    std::fill(out.x8.begin() + std::ptrdiff_t(real), out.x8.end(), zero8);
    out.scales8.resize(size_t(n_tokens));
  }
  IntQuantizeRowFn quantize_row = quantize_int_row;
  for (const IntLinear* w : weights) {
    if (w->kernels().quantize_row) quantize_row = w->kernels().quantize_row;
  }
  auto quantize_tokens = [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int16_t* q16 = need16 ? out.x16.data() + t * padded : nullptr;
      int8_t* q8 = need8 ? out.x8.data() + t * padded : nullptr;
      quantize_row({x + t * cols, cols, q16, q8, offset, need16 ? out.scales16.data() + t : nullptr,
                    need8 ? out.scales8.data() + t : nullptr});
      if (q16) std::fill(q16 + cols, q16 + padded, int16_t(0));
      if (q8) std::fill(q8 + cols, q8 + padded, zero8);
    }
  };
  if (pool) pool->parallel_for(n_tokens, kParallelTokens, quantize_tokens);
  else quantize_tokens(0, 0, n_tokens);
}

namespace {

void compute_span_sums(IntActivations& x, int64_t span, int64_t n_spans, ThreadPool& pool) {
  if (x.sum_span == span) return;
  x.sum_span = span;
  x.span_sums.resize(size_t(x.n_tokens * n_spans));
  const int16_t* x16 = x.x16.data();
  int32_t* sums = x.span_sums.data();
  const int64_t padded = x.padded_cols;
  pool.parallel_for(x.n_tokens, kParallelTokens, [=](int, int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int16_t* row = x16 + t * padded;
      for (int64_t s = 0; s < n_spans; ++s) {
        const int64_t begin = s * span, end = s + 1 == n_spans ? padded : begin + span;
        int32_t sum = 0;
        for (int64_t c = begin; c < end; ++c) sum += row[c];
        sums[t * n_spans + s] = sum;
      }
    }
  });
}

void split_bytes(const int16_t* __restrict in, size_t n, uint8_t* __restrict hi, uint8_t* __restrict lo) {
  for (size_t i = 0; i < n; ++i) {
    lo[i] = uint8_t(uint16_t(in[i]) & 0xFF);
    hi[i] = uint8_t((uint16_t(in[i]) >> 8) ^ 0x80);  // (v >> 8) + 128 as a byte
  }
}

// x16 as the bytes the row-group kernels multiply: x = 256 h + l, stored as
// h + 128 and l (padding rows included, so tiles of 16 tokens can load).
void split_int16(IntActivations& x, ThreadPool& pool) {
  if (x.split) return;
  x.split = true;
  x.x_hi.resize(x.x16.size());
  x.x_lo.resize(x.x16.size());
  const size_t real = size_t(x.n_tokens * x.padded_cols), row = size_t(x.padded_cols);
  const int16_t* in = x.x16.data();
  uint8_t* hi = x.x_hi.data();
  uint8_t* lo = x.x_lo.data();
  pool.parallel_for(x.n_tokens, kParallelTokens, [=](int, int64_t first, int64_t last) {
    split_bytes(in + size_t(first) * row, size_t(last - first) * row, hi + size_t(first) * row, lo + size_t(first) * row);
  });
  // Padding tokens are zeros: h + 128 = 128 and l = 0.
  std::memset(hi + real, 128, x.x_hi.size() - real);
  std::memset(lo + real, 0, x.x_lo.size() - real);
}

constexpr int64_t kClaimedMinTokens = 16;
constexpr int kClaimedChunksPerThread = 4;

void group_matmul(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const IntGroupLayout& l = w.group_layout();
  const IntGroupKernels& k = w.group_kernels();
  const IntGroupFn amx = l.int8_activations ? k.amx_a8 : k.amx_a16;
  // AMX tiles sum 64 columns a product: spans of half a chunk go through VNNI.
  const bool tiles = amx && n_tokens >= kAmxMinTokens && l.span % kGroupChunk == 0;
  // Half-chunk spans: the AVX2 kernel reads each line once a half, where the
  // AVX-512 one takes both halves in one pass (2-3x faster for one token).
  const bool few = !l.int8_activations && k.a16_few_tokens && n_tokens <= kFewTokens && l.span >= kGroupChunk;
  const IntGroupFn fn = tiles ? amx : l.int8_activations ? k.a8 : few ? k.a16_few_tokens : k.a16;
  if (!l.int8_activations) {
    if (!k.int16_activations && !few) split_int16(x, pool);
    // AMX tiles take the zero points off the weights instead.
    if (l.bits == 4 && !tiles) compute_span_sums(x, l.span, l.n_spans, pool);
  }
  const int64_t groups = (w.rows() + kRowGroup - 1) / kRowGroup;
  // A prompt's groups are many equal pieces of compute: claimed as threads
  // free up, so a thread on a slowed vCPU takes fewer. One token's product
  // reads memory, and each thread streams one contiguous half.
  const int per_thread = n_tokens >= kClaimedMinTokens ? kClaimedChunksPerThread : 1;
  pool.parallel_for_claimed(groups, 2, per_thread, [&](int, int64_t begin, int64_t end) {
    IntGroupTask t = w.group_task(begin, end - begin);
    t.x_hi = x.x_hi.data();
    t.x_lo = x.x_lo.data();
    t.x16 = x.x16.data();
    t.x8 = reinterpret_cast<const uint8_t*>(x.x8.data());
    t.x_scales = l.int8_activations ? x.scales8.data() : x.scales16.data();
    t.x_span_sums = l.bits == 4 && !tiles ? x.span_sums.data() : nullptr;
    t.n_tokens = n_tokens;
    t.y = y + begin * kRowGroup;
    t.y_stride = w.rows();
    fn(l, t);
  });
}

void int_matmul_in_order(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool);

// The activations with their columns in the weight's stored order, into `out`.
void reorder_inputs(const IntActivations& x, const std::vector<int32_t>& order, int64_t n_tokens, IntActivations& out) {
  out.padded_cols = x.padded_cols;
  out.n_tokens = n_tokens;
  out.sum_span = 0;
  out.split = false;
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

// Tokens [t0, t0 + tile) of a task's activations.
void set_task_tokens(const IntLinear& w, const IntActivations& x, int64_t t0, int tile, IntRowTask& task) {
  const bool a8 = w.int8_activations();
  const int64_t padded = x.padded_cols;
  task.x = a8 ? static_cast<const void*>(x.x8.data() + t0 * padded) : static_cast<const void*>(x.x16.data() + t0 * padded);
  task.x_stride = padded;
  task.x_scales = (a8 ? x.scales8.data() : x.scales16.data()) + t0;
  task.x_span_sums = w.bits() == 4 && w.kernels().reads_span_sums ? x.span_sums.data() + t0 * w.layout().n_spans : nullptr;
  task.n_tokens = tile;
}

// One or two tokens (decode) through kernels that take rows spread apart:
// each task takes one row from each quarter of the weight, so a thread
// reads four separate sequential streams, which the prefetchers serve at
// full speed where one stream (or rows interleaved within one stretch)
// left a decode step at about two thirds of the read bandwidth. The rows
// past the quarters go one task at a time.
void spread_matmul(const IntLinear& w, const IntActivations& x, IntRowFn fn, int64_t n_tokens, float* y, ThreadPool& pool) {
  const int64_t rows = w.rows(), quarter = rows / kIntRowTile;
  constexpr int64_t kQuarterRows = 16;
  const int64_t quarter_tasks = (quarter + kQuarterRows - 1) / kQuarterRows;
  pool.parallel_for(quarter_tasks + 1, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      if (job == quarter_tasks) {  // the rows past the quarters
        for (int64_t r = kIntRowTile * quarter; r < rows; ++r) {
          IntRowTask task = w.row_task(r, 1);
          set_task_tokens(w, x, 0, int(n_tokens), task);
          task.y = y + r;
          task.y_stride = rows;
          fn(w.layout(), task);
        }
        continue;
      }
      for (int64_t q = job * kQuarterRows; q < std::min(quarter, (job + 1) * kQuarterRows); ++q) {
        IntRowTask task = w.row_task(q, kIntRowTile);
        task.w_stride = size_t(quarter) * w.row_bytes();
        task.row_step = quarter;
        set_task_tokens(w, x, 0, int(n_tokens), task);
        task.y = y + q;
        task.y_stride = rows;
        fn(w.layout(), task);
      }
    }
  });
}

void int_matmul_in_order(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.row_groups()) return group_matmul(w, x, n_tokens, y, pool);
  if (w.bits() == 4 && w.kernels().reads_span_sums) compute_span_sums(x, w.layout().span, w.layout().n_spans, pool);
  const bool a8 = w.int8_activations();
  const IntRowFn fn = a8 ? w.kernels().a8_w8 : w.bits() == 8 ? w.kernels().a16_w8 : w.kernels().a16_w4;
  if (w.kernels().spread_rows && n_tokens <= 2 && w.rows() >= 4 * kIntRowTile) {
    return spread_matmul(w, x, fn, n_tokens, y, pool);
  }
  const int64_t rows = w.rows();
  // Rows in blocks small enough that a block's weights stay in L1/L2 while
  // every tile of tokens passes over them.
  constexpr int64_t kRowBlock = 16;
  // Tiles of kIntRowTile rows at every batch size: their independent sums
  // keep the multipliers busy, and the kernels prefetch ahead of the tile's
  // reads (weight_prefetch.h), which one row at a time no longer needs.
  pool.parallel_for(rows, kRowBlock, [&](int, int64_t begin, int64_t end) {
    for (int64_t r0 = begin; r0 < end; r0 += kRowBlock) {
      const int64_t r1 = std::min(end, r0 + kRowBlock);
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kIntTokenTile) {
        const int tile = int(std::min<int64_t>(kIntTokenTile, n_tokens - t0));
        for (int64_t r = r0; r < r1; r += kIntRowTile) {
          IntRowTask task = w.row_task(r, int(std::min<int64_t>(kIntRowTile, r1 - r)));
          set_task_tokens(w, x, t0, tile, task);
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
