#pragma once
// The row-group layout of integer linear weights, for AMX tiles and the
// AVX-512 VNNI and AVX2 kernels that share their arithmetic.
//
// Weights: rows in groups of 16 (the last one zero-padded), columns in
// chunks of 64 (zero-padded). Each (group, chunk) is one block, blocks in
// group-major order:
//   8 bits: 1 KiB, byte q*64 + n*4 + j = W[16g + n][64c + 4q + j], q < 16:
//           exactly an AMX int8 B tile (16 rows of 64 bytes), and for
//           VNNI a 64-byte line holds four columns of all 16 rows.
//   4 bits: 512 bytes, byte q*64 + n*4 + j (q < 8) holds the unsigned nibble
//           of W[16g + n][64c + 4q + j] low and of column 64c + 32 + 4q + j
//           high, so the low nibbles of the eight lines are the tile's first
//           eight rows and the high nibbles its last eight.
//
// Spans are whole chunks, or at 4 bits 32 columns: a chunk's low nibbles
// (span 2c) and its high ones (span 2c + 1). AMX tiles take whole chunks
// only; half-chunk spans go through the VNNI kernels on AMX machines.
//
// Arithmetic (bit for bit the same in the AMX, the VNNI and the AVX2
// kernels, so a token's result depends neither on its batch nor on the
// instruction set):
// - A16: per span of at most 512 columns, the exact integer
//     S = sum(x w) - zero * sum(x)   (zero: 4 bits, unsigned nibbles)
//   then acc = fma(float(S), scale, acc) span by span, and y = acc * x_scale.
//   AVX-512 and AMX split each int16 activation x = 256 h + l with l in
//   [0, 255] and h in [-128, 127] and multiply the bytes (h + 128) and l
//   with the weights (unsigned-by-signed products, vpdpbusd / tdpbusd):
//     S = 256 * sum((h+128) w) + sum(l w) - 32768 * sum(w) - zero * sum(x)
//   (wrapping int32 arithmetic; S itself fits). AVX2 multiplies the int16
//   activations themselves (vpmaddwd, IntGroupKernels::int16_activations).
// - DA8: S = sum(x w) over the whole row; y = float(S) * (x_scale * w_scale).
//   AVX-512 and AMX take the activations as bytes x + 128 and subtract
//   128 * sum(w); AVX2 takes them signed.
#include <cstddef>
#include <cstdint>

namespace tessera::cpu {

constexpr int kRowGroup = 16;
constexpr int64_t kGroupChunk = 64;
// Activation rows are allocated in multiples of this, so a tile of 16
// tokens may always be loaded.
constexpr int64_t kTokenBlock = 16;

struct IntGroupLayout {
  int bits;             // 8 or 4
  bool int8_activations;
  int64_t padded_cols;  // multiple of 64
  int64_t chunks;       // padded_cols / 64
  int64_t span;         // columns per span, a multiple of 64 (A16)
  int64_t n_spans;
  size_t block_bytes;   // 1024 (8 bits) or 512 (4 bits)
};

// A run of consecutive row groups against all tokens of one call.
struct IntGroupTask {
  const uint8_t* w;         // the first group's first block
  const float* scales;      // (groups, n_spans, 16)
  const int32_t* offsets;   // A16: (groups, n_spans, 16) 32768 * span weight sum; DA8: (groups, 16) 128 * row sum
  const int32_t* zeros;     // 4 bits: (groups, n_spans, 16) zero points in the unsigned-nibble domain
  int64_t groups;
  int64_t rows;             // valid rows from the first group's first row
  const uint8_t* x_hi;      // A16: (tokens, padded_cols) h + 128
  const uint8_t* x_lo;      // A16: (tokens, padded_cols) l
  const int16_t* x16;       // A16, kernels with int16_activations: (tokens, padded_cols)
  const uint8_t* x8;        // DA8: (tokens, padded_cols) x + 128 (AVX-512, AMX) or x (AVX2)
  const float* x_scales;    // (tokens)
  const int32_t* x_span_sums;  // 4 bits, VNNI: (tokens, n_spans)
  int64_t n_tokens;
  float* y;                 // y[t * y_stride + r], r counted from the first group's first row
  int64_t y_stride;
};

using IntGroupFn = void (*)(const IntGroupLayout&, const IntGroupTask&);

struct IntGroupKernels {
  IntGroupFn a16 = nullptr;  // any number of tokens
  IntGroupFn a8 = nullptr;
  IntGroupFn amx_a16 = nullptr;  // set where the OS grants AMX tiles
  IntGroupFn amx_a8 = nullptr;
  // A16 kernels read the int16 activations (IntGroupTask::x16) rather than
  // their bytes h + 128 and l.
  bool int16_activations = false;
  // Optional: A16 for one or two tokens, reading the int16 activations
  // (the AVX2 kernel, on AVX-512 machines), for spans of whole chunks.
  IntGroupFn a16_few_tokens = nullptr;
};

IntGroupKernels avx512_group_kernels();  // AVX-512 F/BW/VL and VNNI
IntGroupKernels amx_group_kernels();     // the above plus AMX int8
IntGroupKernels avx2_group_kernels();    // AVX2 and FMA

// One block from a 16 x 64 matrix of weight codes (row-major: int8 values,
// or unsigned nibbles in [0, 15] for 4 bits).
void pack_row_group_block(int bits, const int8_t* codes16x64, uint8_t* block);

}  // namespace tessera::cpu
