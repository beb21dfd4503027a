#include "kernels/cpu/linear/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "quant/gguf_blocks.h"
#include "kernels/cpu/linear/quantize_rows.h"

namespace tessera::cpu {

LinearWeight::LinearWeight(std::string name, DType dtype, const void* data, int64_t rows, int64_t cols,
                           const IsaFeatures& isa, bool prompt_copy)
    : name_(std::move(name)), dtype_(dtype), data_(static_cast<const uint8_t*>(data)), rows_(rows), cols_(cols) {
  kernel_ = select_vec_dot(dtype, isa);
  if (!kernel_.fn) throw Error("weight '" + name_ + "': no CPU matmul kernel for " + std::string(dtype_name(dtype)));
  const auto row_bytes = dtype_bytes(dtype, uint64_t(cols));
  const auto act_bytes = dtype_bytes(kernel_.activation_type, uint64_t(cols));
  if (!row_bytes || !act_bytes) {
    throw Error("weight '" + name_ + "': row of " + std::to_string(cols) + " is not a whole number of " +
                std::string(dtype_name(dtype)) + " blocks");
  }
  row_bytes_ = *row_bytes;
  act_row_bytes_ = *act_bytes;
  if (prompt_copy && kernel_.fn_row_group) {
    if (auto groups = RowGroups::repack(dtype, data, rows, cols, kernel_.row_group_offset)) row_groups_ = std::make_shared<const RowGroups>(std::move(*groups));
  }
  // A small f32 matrix (an MoE router: experts x d_model) costs oneDNN's call
  // overhead many times its arithmetic: the dot products serve every token
  // count instead (by its shape alone, so a row's bits never depend on the batch).
  constexpr int64_t kSmallF32Elements = int64_t(1) << 16;
  if (dtype == DType::kF32 && rows * cols > kSmallF32Elements) dense_ = std::make_shared<OnednnMatmul>(data, false, rows, cols);
  // bf16: oneDNN's bf16 matmul where the CPU has bf16 products; elsewhere
  // prompts go to oneDNN on tiles widened to f32 and a few tokens to the
  // bf16 dot products, which read the weights as they are.
  if (dtype == DType::kBF16) {
    dense_ = std::make_shared<OnednnMatmul>(data, true, rows, cols, isa.avx512_bf16 || isa.amx_bf16);
  }
}

void convert_activation_row(DType type, const float* x, void* out, int64_t n) {
  switch (type) {
    case DType::kF32: std::memcpy(out, x, size_t(n) * sizeof(float)); return;
    case DType::kF16: convert_row_f16(x, static_cast<uint16_t*>(out), n); return;
    case DType::kBF16: convert_row_bf16(x, static_cast<uint16_t*>(out), n); return;
    case DType::kQ8_0: quantize_row_q8_0(x, static_cast<BlockQ8_0*>(out), n); return;
    case DType::kQ8_1: quantize_row_q8_1(x, static_cast<BlockQ8_1*>(out), n); return;
    case DType::kQ8_K: quantize_row_q8_k(x, static_cast<BlockQ8_K*>(out), n); return;
    default: throw Error("matmul: no activation conversion to " + std::string(dtype_name(type)));
  }
}

namespace {

constexpr int64_t kRowTile = 16;  // weight rows reused across all tokens while in cache

// Activation rows converted to one format, and for the 32-element formats
// their block scales as f32 in the block-major layout of VecDot8Fn, per group
// of eight rows.
struct ConvertedInput {
  DType type;
  const uint8_t* rows;
  const float* scales = nullptr;  // [n_tokens / 8][blocks][8]
  const float* sums = nullptr;    // the same for Q8_1's s
  const Q8_0PairBlock* pairs = nullptr;  // Q8_0: [n_tokens / 8][blocks], when a kernel reads them
  const Q8_KPairBlock* k_pairs = nullptr;  // Q8_K: [n_tokens / 8][super-blocks], likewise
  const TokenBlock* token_blocks = nullptr;  // Q8_0: [n_tokens][blocks], for row-group kernels
  const float* token_scales = nullptr;       // [n_tokens][blocks], their scales
  int token_offset = 0;                      // the weight offset token_blocks' biases take off
};

// Where token m's block scales go in the block-major tables (null when the
// format has none or the token is past the last whole group of eight).
struct BlockScaleTables {
  float* scales = nullptr;
  float* sums = nullptr;
  int64_t blocks = 0, rows = 0;  // rows covered: whole groups of eight

  void record(DType type, const uint8_t* row, int64_t m) const {
    if (!scales || m >= rows) return;
    const size_t block_bytes = type == DType::kQ8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
    for (int64_t b = 0; b < blocks; ++b) {
      uint16_t half[2];
      std::memcpy(half, row + size_t(b) * block_bytes, sizeof half);
      const size_t at = size_t(((m / 8) * blocks + b) * 8 + m % 8);
      scales[at] = f16_to_f32(half[0]);
      if (sums) sums[at] = f16_to_f32(half[1]);
    }
  }
};

// Block-scale tables for the 32-element activation formats, sized in `table`.
BlockScaleTables block_scale_tables(DType type, int64_t cols, int64_t n_tokens, std::vector<float>& table) {
  BlockScaleTables t;
  if (type != DType::kQ8_0 && type != DType::kQ8_1) return t;
  t.blocks = cols / kQK;
  t.rows = n_tokens / 8 * 8;
  if (t.rows == 0) return t;
  const size_t per_table = size_t(t.rows * t.blocks);
  table.resize(type == DType::kQ8_1 ? 2 * per_table : per_table);
  t.scales = table.data();
  if (type == DType::kQ8_1) t.sums = table.data() + per_table;
  return t;
}

// Conversions already made for one group of products (one per activation format).
struct ConvertedInputs {
  std::array<ConvertedInput, kMaxSharedOutputs> items;
  size_t count = 0;
};

// Groups of eight converted activation rows (`Block`s, `block_elems` values
// each) packed by `pack` into `out`, one `Pair` per block of the group.
template <class Block, class Pair, void (*pack)(const Block* const[8], int64_t, Pair*)>
const Pair* pack_groups(const uint8_t* acts, size_t row_bytes, int64_t cols, int64_t block_elems, int64_t n_tokens,
                        std::vector<Pair>& out, ThreadPool& pool) {
  const int64_t groups = n_tokens / 8, blocks = cols / block_elems;
  if (out.size() < size_t(groups * blocks)) out.resize(size_t(groups * blocks));
  pool.parallel_for(groups, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const Block* rows[8];
      for (int j = 0; j < 8; ++j) rows[j] = reinterpret_cast<const Block*>(acts + size_t(g * 8 + j) * row_bytes);
      pack(rows, blocks, out.data() + g * blocks);
    }
  });
  return out.data();
}

// Every token's Q8_0 row as TokenBlocks for row-group kernels at `offset`.
void pack_tokens(const uint8_t* acts, size_t row_bytes, int64_t cols, int64_t n_tokens, int offset,
                 std::vector<TokenBlock>& blocks_out, std::vector<float>& scales_out, ThreadPool& pool) {
  const int64_t blocks = cols / kQK;
  if (blocks_out.size() < size_t(n_tokens * blocks)) blocks_out.resize(size_t(n_tokens * blocks));
  if (scales_out.size() < size_t(n_tokens * blocks)) scales_out.resize(size_t(n_tokens * blocks));
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const auto* row = reinterpret_cast<const BlockQ8_0*>(acts + size_t(m) * row_bytes);
      pack_token_blocks(row, blocks, offset, blocks_out.data() + m * blocks, scales_out.data() + m * blocks);
    }
  });
}

// Whether a product of `n_tokens` rows goes through `w`'s row-group copy.
// From three tokens the decode-rows kernels are bound by their arithmetic
// (which the row groups' layout cuts by half), not by reading the weights.
bool uses_row_groups(const LinearWeight& w, int64_t n_tokens) { return w.row_groups() && n_tokens >= 3; }

// Whether a product of `n_tokens` rows reads `w` four rows at a time from
// its quarters, every token at once (VecDotRowsFn).
bool uses_decode_rows(const LinearWeight& w, int64_t n_tokens) {
  return w.kernel().fn_rows && w.rows() >= kDecodeRows && n_tokens <= kMaxRowTokens && !uses_row_groups(w, n_tokens);
}

// Every per-format scratch buffer has room for slot `slot`.
void grow_to_slot(MatmulScratch& scratch, size_t slot) {
  auto grow = [slot](auto& buffers) {
    if (buffers.size() <= slot) buffers.resize(slot + 1);
  };
  grow(scratch.activations);
  grow(scratch.block_scales);
  grow(scratch.pair_blocks);
  grow(scratch.k_pair_blocks);
  grow(scratch.token_blocks);
  grow(scratch.token_scales);
}

// The input converted to `w`'s activation format into scratch slot `slot`
// (grown to hold it),
// with the block-scale tables of the kernels that read them.
ConvertedInput convert_rows(const LinearWeight& w, const float* x, int64_t n_tokens, size_t slot, MatmulScratch& scratch,
                            ThreadPool& pool) {
  const DType type = w.kernel().activation_type;
  const size_t row_bytes = w.activation_row_bytes();
  const int64_t cols = w.cols();
  std::vector<uint8_t>& buffer = scratch.activations[slot];
  if (buffer.size() < row_bytes * size_t(n_tokens)) buffer.resize(row_bytes * size_t(n_tokens));
  uint8_t* acts = buffer.data();
  // Kernels over packed pairs or row groups read the scales from those.
  const bool packed = w.kernel().fn8_pairs && type == DType::kQ8_0 && n_tokens >= 8;
  const BlockScaleTables tables = packed ? BlockScaleTables{} : block_scale_tables(type, cols, n_tokens, scratch.block_scales[slot]);
  pool.parallel_for(n_tokens, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      uint8_t* row = acts + size_t(m) * row_bytes;
      convert_activation_row(type, x + m * cols, row, cols);
      tables.record(type, row, m);
    }
  });
  return {type, acts, tables.scales, tables.sums};
}

// The input converted for `w`, converting it on first use: one conversion
// per activation format, with the packed forms each weight's kernels read
// added as a weight first needs them.
ConvertedInput converted_input(const LinearWeight& w, const float* x, int64_t n_tokens, ConvertedInputs& done,
                               MatmulScratch& scratch, ThreadPool& pool) {
  const VecDotKernel& kernel = w.kernel();
  const DType type = kernel.activation_type;
  const size_t row_bytes = w.activation_row_bytes();
  const int64_t cols = w.cols();
  size_t slot = 0;
  while (slot < done.count && done.items[slot].type != type) ++slot;
  grow_to_slot(scratch, slot);
  if (slot == done.count) {
    done.items[slot] = convert_rows(w, x, n_tokens, slot, scratch, pool);
    ++done.count;
  }
  ConvertedInput& in = done.items[slot];
  if (uses_row_groups(w, n_tokens)) {
    const int offset = w.row_groups()->offset();
    if (!in.token_blocks) {
      pack_tokens(in.rows, row_bytes, cols, n_tokens, offset, scratch.token_blocks[slot], scratch.token_scales[slot], pool);
      in.token_blocks = scratch.token_blocks[slot].data();
      in.token_scales = scratch.token_scales[slot].data();
      in.token_offset = offset;
    } else if (in.token_offset != offset) {
      // One kernel table gives every copy its offset; weights of one input never differ.
      throw Error("matmul: weight '" + w.name() + "' keeps its row groups at offset " + std::to_string(offset) +
                  ", another weight of its input at " + std::to_string(in.token_offset));
    }
    return in;
  }
  if (uses_decode_rows(w, n_tokens)) return in;
  if (kernel.fn8_pairs && type == DType::kQ8_0 && n_tokens >= 8 && !in.pairs) {
    in.pairs = pack_groups<BlockQ8_0, Q8_0PairBlock, pack_q8_0_pairs>(in.rows, row_bytes, cols, kQK, n_tokens,
                                                                       scratch.pair_blocks[slot], pool);
  }
  if (kernel.fn8_k_pairs && type == DType::kQ8_K && n_tokens >= 8 && !in.k_pairs) {
    in.k_pairs = pack_groups<BlockQ8_K, Q8_KPairBlock, pack_q8_k_pairs>(in.rows, row_bytes, cols, kQK_K, n_tokens,
                                                                         scratch.k_pair_blocks[slot], pool);
  }
  return in;
}

// y[(m + j) * y_stride + r + i] = out[i * 8 + j]: eight tokens' outputs of
// `n_rows` weight rows from r.
void store_eight_tokens(const float* out, int n_rows, int64_t m, int64_t r, int64_t y_stride, float* y) {
  for (int i = 0; i < n_rows; ++i) {
    for (int j = 0; j < 8; ++j) y[(m + j) * y_stride + r + i] = out[i * 8 + j];
  }
}

// Rows [r0, r1) for the whole groups of eight tokens, through the kernels
// that read packed pair blocks; returns how many tokens they took (0 if
// the format has no such kernel).
int64_t multiply_pair_groups(const LinearWeight& w, const ConvertedInput& in, int64_t n_tokens, int64_t r0, int64_t r1,
                             float* y) {
  const int64_t rows = w.rows(), cols = w.cols(), groups = n_tokens / 8;
  const VecDotKernel& kernel = w.kernel();
  float out[kPairRows * 8];
  if (kernel.fn8_pairs && in.pairs) {
    for (int64_t g = 0; g < groups; ++g) {
      const Q8_0PairBlock* pairs = in.pairs + g * (cols / kQK);
      int64_t r = r0;
      for (; kernel.fn8_pairs_rows && r + kPairRows <= r1; r += kPairRows) {
        kernel.fn8_pairs_rows(cols, w.row(r), w.row_bytes(), pairs, out);
        store_eight_tokens(out, kPairRows, g * 8, r, rows, y);
      }
      for (; r < r1; ++r) {
        kernel.fn8_pairs(cols, w.row(r), pairs, out);
        store_eight_tokens(out, 1, g * 8, r, rows, y);
      }
    }
    return groups * 8;
  }
  if (kernel.fn8_k_pairs && in.k_pairs) {
    for (int64_t g = 0; g < groups; ++g) {
      const Q8_KPairBlock* pairs = in.k_pairs + g * (cols / kQK_K);
      for (int64_t r = r0; r < r1; ++r) {
        kernel.fn8_k_pairs(cols, w.row(r), pairs, out);
        store_eight_tokens(out, 1, g * 8, r, rows, y);
      }
    }
    return groups * 8;
  }
  return 0;
}

// Rows [r0, r1), one row group, of `w`'s row-group copy for every token, two
// tokens at a time.
static_assert(kRowTile == kGroupRows, "a row tile is one row group");
void multiply_row_group(const LinearWeight& w, const ConvertedInput& in, int64_t n_tokens, int64_t r0, int64_t r1, float* y) {
  const int64_t blocks = w.cols() / kQK, rows = w.rows();
  const RowGroupBlock* group = w.row_groups()->group(r0 / kGroupRows);
  float out[2 * kGroupRows];
  for (int64_t m = 0; m < n_tokens; m += 2) {
    const int n = int(std::min<int64_t>(2, n_tokens - m));
    const TokenBlock* tokens[2] = {in.token_blocks + m * blocks, in.token_blocks + (m + n - 1) * blocks};
    const float* scales[2] = {in.token_scales + m * blocks, in.token_scales + (m + n - 1) * blocks};
    w.kernel().fn_row_group(blocks, group, tokens, scales, n, out);
    for (int t = 0; t < n; ++t) {
      for (int64_t r = r0; r < r1; ++r) y[(m + t) * rows + r] = out[t * kGroupRows + (r - r0)];
    }
  }
}

// Rows [r0, r1) of one weight for every token: eight tokens at a time where
// the format has such a kernel, then four, then one. A lone token reads one
// weight row at a time: interleaving the reads of several rows measured up
// to twice as slow from memory (the prefetchers follow one stream per
// thread best).
void multiply_tile(const LinearWeight& w, const ConvertedInput& in, int64_t n_tokens, int64_t r0, int64_t r1, float* y) {
  const size_t act_bytes = w.activation_row_bytes();
  const int64_t rows = w.rows(), cols = w.cols();
  const VecDotKernel& kernel = w.kernel();
  const uint8_t* acts = in.rows;
  if (uses_row_groups(w, n_tokens)) {
    multiply_row_group(w, in, n_tokens, r0, r1, y);
    return;
  }
  int64_t m = multiply_pair_groups(w, in, n_tokens, r0, r1, y);
  if (kernel.fn8 && in.scales) {
    const int64_t blocks = cols / kQK;
    for (; m + 8 <= n_tokens; m += 8) {
      const void* eight[8];
      for (int j = 0; j < 8; ++j) eight[j] = acts + size_t(m + j) * act_bytes;
      const size_t group_offset = size_t((m / 8) * blocks * 8);
      const float* sums = in.sums ? in.sums + group_offset : nullptr;
      float out[8];
      for (int64_t r = r0; r < r1; ++r) {
        kernel.fn8(cols, w.row(r), eight, in.scales + group_offset, sums, out);
        store_eight_tokens(out, 1, m, r, rows, y);
      }
    }
  }
  for (; kernel.fn4 && m + 4 <= n_tokens; m += 4) {
    const void* four[4];
    for (int j = 0; j < 4; ++j) four[j] = acts + size_t(m + j) * act_bytes;
    float out[4];
    for (int64_t r = r0; r < r1; ++r) {
      kernel.fn4(cols, w.row(r), four, out);
      for (int j = 0; j < 4; ++j) y[(m + j) * rows + r] = out[j];
    }
  }
  for (; m < n_tokens; ++m) {
    const uint8_t* act = acts + size_t(m) * act_bytes;
    float* out = y + m * rows;
    for (int64_t r = r0; r < r1; ++r) out[r] = kernel.fn(cols, w.row(r), act);
  }
}

// A few tokens through a weight whose kernel takes kDecodeRows rows at once
// (VecDotRowsFn). The rows are taken from kDecodeRows quarters of the
// weight, far apart: rows interleaved within one stretch of memory defeat
// the hardware prefetchers (a sequential read measured at half its speed),
// while as many separate sequential streams keep full speed.
struct DecodeQuarters {
  int64_t rows = 0;   // rows per quarter; the rows past kDecodeRows * rows go one at a time
  int64_t tiles = 0;  // kRowTile-row slices of a quarter, and one more for the rows left over

  DecodeQuarters() = default;
  explicit DecodeQuarters(const LinearWeight& w) : rows(w.rows() / kDecodeRows) {
    tiles = (rows + kRowTile - 1) / kRowTile + (w.rows() % kDecodeRows ? 1 : 0);
  }
};

// Slice `tile` of every quarter (or, past them, the rows left over) for all
// `n_tokens` (at most kMaxRowTokens) tokens.
void multiply_decode_tile(const LinearWeight& w, const ConvertedInput& in, int64_t n_tokens, const DecodeQuarters& quarters,
                          int64_t tile, float* y) {
  const int64_t cols = w.cols(), rows = w.rows();
  const size_t act_bytes = w.activation_row_bytes();
  const void* tokens[kMaxRowTokens];
  for (int64_t m = 0; m < n_tokens; ++m) tokens[m] = in.rows + size_t(m) * act_bytes;
  const int64_t q0 = tile * kRowTile;
  if (q0 >= quarters.rows) {
    for (int64_t m = 0; m < n_tokens; ++m) {
      for (int64_t r = kDecodeRows * quarters.rows; r < rows; ++r) y[m * rows + r] = w.kernel().fn(cols, w.row(r), tokens[m]);
    }
    return;
  }
  const size_t stride = size_t(quarters.rows) * w.row_bytes();
  float out[kMaxRowTokens * kDecodeRows];  // [token][quarter]
  for (int64_t i = q0; i < std::min(quarters.rows, q0 + kRowTile); ++i) {
    w.kernel().fn_rows(cols, w.row(i), stride, tokens, int(n_tokens), out);
    for (int64_t m = 0; m < n_tokens; ++m) {
      for (int q = 0; q < kDecodeRows; ++q) y[m * rows + q * quarters.rows + i] = out[m * kDecodeRows + q];
    }
  }
}

}  // namespace

void matmul(const LinearWeight& w, const float* x, int64_t n_tokens, float* y, MatmulScratch& scratch, ThreadPool& pool) {
  const MatmulOutput one{&w, y};
  matmul_shared_input({&one, 1}, x, n_tokens, scratch, pool);
}

void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens, MatmulScratch& scratch,
                         ThreadPool& pool) {
  struct Quantised {
    const LinearWeight* weight;
    float* y;
    ConvertedInput input;
    int64_t first_tile;
    DecodeQuarters quarters;  // tiles > 0: every token at once, four rows at a time
  };
  if (outputs.size() > kMaxSharedOutputs) throw Error("matmul: more than " + std::to_string(kMaxSharedOutputs) + " weights share one input");
  std::array<Quantised, kMaxSharedOutputs> jobs;
  size_t n_jobs = 0;
  ConvertedInputs converted;
  int64_t n_tiles = 0;
  for (const MatmulOutput& o : outputs) {
    if (o.weight->cols() != outputs.front().weight->cols()) {
      throw Error("matmul: weight '" + o.weight->name() + "' has " + std::to_string(o.weight->cols()) +
                  " columns, the others of its group " + std::to_string(outputs.front().weight->cols()));
    }
    if (o.weight->dense() && n_tokens >= o.weight->dense()->min_tokens()) {
      o.weight->dense()->run(x, n_tokens, o.y);
      continue;
    }
    const ConvertedInput input = converted_input(*o.weight, x, n_tokens, converted, scratch, pool);
    const bool quartered = uses_decode_rows(*o.weight, n_tokens);
    jobs[n_jobs++] = {o.weight, o.y, input, n_tiles, quartered ? DecodeQuarters(*o.weight) : DecodeQuarters()};
    n_tiles += quartered ? jobs[n_jobs - 1].quarters.tiles : (o.weight->rows() + kRowTile - 1) / kRowTile;
  }
  if (n_jobs == 0) return;
  // Threads claim runs of consecutive tiles, so a thread that falls behind
  // (a page fault, a descheduled core) delays the loop by one run at most.
  // With few tokens the product is bound by memory: runs of about an eighth
  // of a thread's share keep each thread's reads one long stream that the
  // hardware prefetcher follows. With many, a tile is long enough alone.
  const int64_t run = n_tokens > 16 ? 1 : std::max<int64_t>(1, n_tiles / (8 * int64_t(pool.size())));
  std::atomic<int64_t> next{0};
  pool.parallel_for(std::min<int64_t>(n_tiles, pool.size()), 1, [&](int, int64_t, int64_t) {
    size_t j = 0;
    for (int64_t first = next.fetch_add(run); first < n_tiles; first = next.fetch_add(run)) {
      for (int64_t tile = first; tile < std::min(n_tiles, first + run); ++tile) {
        while (j + 1 < n_jobs && tile >= jobs[j + 1].first_tile) ++j;
        const Quantised& job = jobs[j];
        if (job.quarters.tiles > 0) {
          multiply_decode_tile(*job.weight, job.input, n_tokens, job.quarters, tile - job.first_tile, job.y);
          continue;
        }
        const int64_t r0 = (tile - job.first_tile) * kRowTile, r1 = std::min(job.weight->rows(), r0 + kRowTile);
        multiply_tile(*job.weight, job.input, n_tokens, r0, r1, job.y);
      }
    }
  });
}

}  // namespace tessera::cpu
