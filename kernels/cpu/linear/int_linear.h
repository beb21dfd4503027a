#pragma once
// y = x · Wᵀ for integer weights with separate scales (quant/int_weights.h:
// A16W8, A16W4, DA8W8), repacked at load for the kernels.
//
// Arithmetic, the same for every batch size (batch invariance):
// - A16 (16-bit activations): each token's row is scaled to int16 (one
//   scale per token, every value within 2^-15 of the row's largest
//   magnitude), multiplied with the weights in exact int32 sums over each
//   span of columns (a quantization group, or at most 4096 columns where the
//   scale is per channel), and the spans are accumulated in f32 with their
//   weight scales.
// - DA8 (int8 activations): each token's row is scaled to int8 (one scale
//   per token) and the whole row's product is one exact integer sum, scaled
//   once by the token's and the channel's scales.
// Integer sums are exact, so AVX-512, AVX2 and scalar code agree bit for bit
// on DA8W8. In the row layout A16 results depend on the instruction set's
// lane width; in row groups (int_linear_groups.h) each span's sum is exact
// before its scale, so AVX2, AVX-512 and AMX agree bit for bit.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/tensor/aligned_buffer.h"
#include "kernels/cpu/linear/int_linear_groups.h"
#include "kernels/cpu/runtime/huge_page_arena.h"
#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/runtime/thread_pool.h"
#include "quant/weight_scheme.h"

namespace tessera::cpu {

// The shape of a packed row, shared by every row of a weight.
struct IntRowLayout {
  int64_t padded_cols;  // columns rounded up to 64; weights and activations are zero beyond `cols`
  int64_t span;         // columns summed in int32 before their scale is applied
  int64_t n_spans;      // spans per row; the last one runs to padded_cols
};

// Up to kIntRowTile consecutive packed weight rows against up to
// kIntTokenTile tokens: each weight load serves every token of the tile and
// each activation load every row, and each (row, token) result is summed
// exactly as it is in any other tile.
struct IntRowTask {
  const uint8_t* w;        // the first packed row; the next ones follow at w_stride bytes
  size_t w_stride;
  const float* scales;     // (n_rows, n_spans)
  const int16_t* zeros;    // (n_rows, n_spans) 4 bits: zero point of the unsigned nibbles, [0, 15]
  const int32_t* row_sums; // (n_rows) int8 activations: sum of each row's int8 weights
  int n_rows;              // 1 .. kIntRowTile
  const void* x;           // n_tokens rows of padded_cols int16 (A16) or int8 (DA8)
  int64_t x_stride;        // elements from one token's row to the next
  const float* x_scales;   // (n_tokens)
  const int32_t* x_span_sums;  // 4 bits, kernels that read them: (n_tokens, n_spans) sums of each span's int16 activations
  int n_tokens;            // 1 .. kIntTokenTile
  float* y;                // y[t * y_stride + r * row_step]
  int64_t y_stride;
  // Row r of the task is row r * row_step of the weight from the first (its
  // scales, zeros and output too); w_stride is then row_step rows' bytes.
  // Only kernels with IntLinearKernels::spread_rows are given a step over 1.
  int64_t row_step = 1;
};

constexpr int kIntRowTile = 4;
constexpr int kIntTokenTile = 4;

using IntRowFn = void (*)(const IntRowLayout&, const IntRowTask&);

// One token's row of `cols` floats (a multiple of 32) scaled to int16 and/or
// int8 (either output may be null): round to nearest even of x * (range /
// max|x|), the scale max|x| / range. Every instruction set rounds alike.
struct IntRowQuantizeArgs {
  const float* x;
  int64_t cols;
  int16_t* q16;
  int8_t* q8;
  bool offset8;  // store int8 values as uint8 (q + 128)
  float* scale16;
  float* scale8;
};
using IntQuantizeRowFn = void (*)(const IntRowQuantizeArgs&);
void quantize_int_row_avx512(const IntRowQuantizeArgs& a);

struct IntLinearKernels {
  IntRowFn a16_w8 = nullptr;
  IntRowFn a16_w4 = nullptr;
  IntRowFn a8_w8 = nullptr;
  bool offset_int8_activations = false;  // DA8 activations stored as uint8 (x + 128)
  IntQuantizeRowFn quantize_row = nullptr;  // null: the portable one
  bool spread_rows = false;  // honour IntRowTask::row_step
  // The 4-bit kernels take zero points off through the activations' span
  // sums (IntRowTask::x_span_sums), not off the weights themselves.
  bool reads_span_sums = false;
};

IntLinearKernels scalar_int_kernels();
IntLinearKernels avx2_int_kernels();
IntLinearKernels avx512_int_kernels();  // needs AVX-512 F/BW/VL and VNNI
IntLinearKernels select_int_kernels(const IsaFeatures& isa);

// Where a weight's rows go: one after another (every instruction set), or
// in groups of 16 (int_linear_groups.h: AVX2, AVX-512 VNNI, and AMX tiles
// where the OS grants them; spans must be multiples of 64 columns, or 32
// at 4 bits).
enum class IntLayout { kAuto, kRows, kRowGroups };

// An integer linear weight in the kernels' layout:
//   8 bits: int8 (rows, padded_cols).
//   4 bits: (rows, padded_cols / 2) bytes in 64-column chunks; byte j of a
//           chunk holds column j in its low nibble and column j + 32 in its
//           high one, as unsigned values (q + 8), so one 32-byte load widens
//           to the two 32-column halves with a mask and a shift.
class IntLinear {
 public:
  // Throws tessera::Error naming the weight if `desc` is malformed. kAuto
  // takes row groups wherever AVX2 runs and the groups allow them (their
  // kernels beat the rows' at every batch size, on AVX2, AVX-512 VNNI and
  // AMX tiles alike). With an arena the weights are packed into space it
  // reserves, where a decode step streams them from huge pages (into
  // ordinary pages where it cannot map one).
  IntLinear(const QuantizedLinear& desc, const IsaFeatures& isa, IntLayout layout = IntLayout::kAuto,
            HugePageArena* arena = nullptr);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int bits() const { return bits_; }
  bool int8_activations() const { return int8_activations_; }
  const IntRowLayout& layout() const { return layout_; }
  const IntLinearKernels& kernels() const { return kernels_; }
  bool row_groups() const { return row_groups_; }
  const IntGroupLayout& group_layout() const { return group_layout_; }
  const IntGroupKernels& group_kernels() const { return group_kernels_; }
  // A task for row groups [group, group + n), activations left to the caller.
  IntGroupTask group_task(int64_t group, int64_t n) const;
  // Empty, or (cols): stored column c multiplies input channel input_order()[c].
  const std::vector<int32_t>& input_order() const { return input_order_; }
  size_t row_bytes() const { return row_bytes_; }  // from one packed row to the next
  // A task for rows [row, row + n_rows), activations left to the caller.
  IntRowTask row_task(int64_t row, int n_rows) const;

 private:
  void pack_rows(const QuantizedLinear& desc, HugePageArena* arena);
  void pack_row_groups(const QuantizedLinear& desc, HugePageArena* arena);
  // Row r's span scales, weight sums and zero points in the group arrays.
  void group_row_spans(const QuantizedLinear& desc, int64_t r, const int8_t* codes, int64_t n_qgroups, const float* scales,
                       const int8_t* zeros);
  // Zeroed space for the packed weights: in the arena where one is given and
  // can map it, else in packed_.
  uint8_t* allocate_packed(size_t bytes, HugePageArena* arena);

  int64_t rows_, cols_;
  int bits_;
  bool int8_activations_;
  IntRowLayout layout_{};
  IntLinearKernels kernels_;
  AlignedBuffer packed_;              // the packed weights, when not in an arena
  std::shared_ptr<const void> arena_chunk_;  // holds them, when in one
  const uint8_t* weights_ = nullptr;  // the packed weights, wherever they lie
  size_t row_bytes_ = 0;
  std::vector<float> scales_;     // (rows, n_spans)
  std::vector<int16_t> zeros_;    // (rows, n_spans), 4 bits
  std::vector<int32_t> row_sums_; // (rows), int8 activations
  std::vector<int32_t> input_order_;
  bool row_groups_ = false;
  IntGroupLayout group_layout_{};
  IntGroupKernels group_kernels_;
  std::vector<float> group_scales_;    // (groups, n_spans, 16)
  std::vector<int32_t> group_offsets_; // (groups, n_spans, 16) or DA8 (groups, 16)
  std::vector<int32_t> group_zeros_;   // 4 bits: (groups, n_spans, 16)
};

// One call's activations, quantized per token for the integer kernels. Rows
// are allocated in multiples of kTokenBlock (zeros beyond n_tokens).
struct IntActivations {
  std::vector<int16_t> x16;  // (n_tokens, padded_cols)
  std::vector<int8_t> x8;    // (n_tokens, padded_cols), uint8 (x + 128) when offset
  // x16 as bytes h + 128 and l (x = 256 h + l) for row-group weights, filled
  // on first use; (n_tokens, padded_cols) each.
  std::vector<uint8_t> x_hi, x_lo;
  bool split = false;
  std::vector<float> scales16, scales8;  // (n_tokens)
  int64_t padded_cols = 0;
  // Sums of the int16 activations over spans of `sum_span` columns, (n_tokens,
  // spans): 4-bit weights take their zero points off through these.
  std::vector<int32_t> span_sums;
  int64_t sum_span = 0;
  int64_t n_tokens = 0;
  // The same activations gathered in a weight's input order (GPTQ act-order),
  // kept so that its buffers are reused from call to call.
  std::unique_ptr<IntActivations> reordered;
};

// Quantizes x (n_tokens, cols) for every weight in `weights` (all of the
// same cols): int16 rows when one of them has 16-bit activations, int8 rows
// when one has int8 activations. With a pool, a prompt's tokens are shared
// among its threads (each row is quantized alone, so the result is the same).
void quantize_int_activations(std::span<const IntLinear* const> weights, const float* x, int64_t n_tokens,
                              IntActivations& out, ThreadPool* pool = nullptr);

// y[t][r] = x[t] · W[r] for t < n_tokens, from activations quantized above
// (which gain the span sums a 4-bit weight needs).
void int_matmul(const IntLinear& w, IntActivations& x, int64_t n_tokens, float* y, ThreadPool& pool);

}  // namespace tessera::cpu
