// Linear layers: y = x · Wᵀ (+ bias), weights read in place in their
// checkpoint layout. GGUF block weights meet activations quantized to 8 bits
// (quantize_q8.cl) with the CPU backend's arithmetic (kernels/cpu/
// vec_dot_x86_impl.h): eight lanes per row, lane l holding the integer sums
// of elements 4l .. 4l + 3 of every 32-element chunk, each block's sums
// scaled into the lane's float accumulator by one fused multiply-add, block
// after block; then the lanes reduced in the CPU's order. Float weights meet
// float activations. Each work-item computes one row for up to
// TOKENS_PER_ITEM tokens, so a row is decoded once for all of them.

#define LANES 8
#define TOKENS_PER_ITEM 8

bool is_k_quant(int type) { return type == WT_Q4_K || type == WT_Q6_K; }

int legacy_block_bytes(int type) {
  return type == WT_Q4_0 ? Q4_0_BYTES : type == WT_Q4_1 ? Q4_1_BYTES : type == WT_Q5_0 ? Q5_0_BYTES : Q8_0_BYTES;
}

// Sums of the groups of four of sixteen products: lanes 0..3 of a chunk half.
int4 group_sums(short16 p) {
  const short8 pairs = p.even + p.odd;
  return convert_int4(pairs.even + pairs.odd);
}

int4 group_sums_wide(int16 p) {
  const int8 pairs = p.even + p.odd;
  return pairs.even + pairs.odd;
}

// Products of 16 weights (at most 6 bits) and 16 activations, in short.
short16 products(uchar16 w, char16 a) { return convert_short16(w) * convert_short16(a); }
short16 signed_products(char16 w, char16 a) { return convert_short16(w) * convert_short16(a); }

// The integer sums of the eight lanes in block (or super-block) b of the
// weight row times one token's activation row `qs`, all lanes in one pass
// and sixteen elements at a time (integer sums are exact in any order):
// lane l sums elements 4l .. 4l + 3 of every 32-element chunk.
int8 block_lane_sums(int type, __global const uchar* row, long b, __global const char* qs) {
  if (!is_k_quant(type)) {
    __global const char* a = qs + b * CHUNK;
    const char16 a0 = vload16(0, a), a1 = vload16(1, a);
    if (type == WT_Q8_0) {
      __global const char* q = (__global const char*)(row + b * Q8_0_BYTES + 2);
      return (int8)(group_sums_wide(convert_int16(vload16(0, q)) * convert_int16(a0)),
                    group_sums_wide(convert_int16(vload16(1, q)) * convert_int16(a1)));
    }
    // Low nibbles are elements 0..15, high nibbles 16..31.
    __global const uchar* block = row + b * legacy_block_bytes(type);
    const uchar16 q = vload16(0, block + (type == WT_Q4_1 ? 4 : type == WT_Q5_0 ? 6 : 2));
    char16 lo = as_char16(q & (uchar16)0x0f), hi = as_char16(q >> (uchar16)4);
    if (type == WT_Q4_0) {
      lo -= (char16)8;
      hi -= (char16)8;
    } else if (type == WT_Q5_0) {
      const uint16 bit = (uint16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      const uint qh = load_u32_bytes(block + 2);
      lo = (lo | convert_char16((((uint16)qh >> bit) & 1u) << 4)) - (char16)16;
      hi = (hi | convert_char16((((uint16)qh >> (bit + 16u)) & 1u) << 4)) - (char16)16;
    }
    return (int8)(group_sums(signed_products(lo, a0)), group_sums(signed_products(hi, a1)));
  }
  __global const char* a = qs + b * 256;
  int8 sums = (int8)0;
  if (type == WT_Q4_K) {
    __global const uchar* block = row + b * Q4_K_BYTES;
    __global const uchar* sc = block + 4;
    for (int c = 0; c < 8; ++c) {
      const int scale = c < 4 ? sc[c] & 0x3f : (sc[c + 4] & 0x0f) | ((sc[c - 4] >> 2) & 0x30);
      __global const uchar* q = block + 16 + (c / 2) * 32;
      const uchar shift = (uchar)((c % 2) * 4);
      const uchar16 w0 = (vload16(0, q) >> shift) & (uchar16)0x0f, w1 = (vload16(1, q) >> shift) & (uchar16)0x0f;
      sums += scale * (int8)(group_sums(products(w0, vload16(0, a + c * CHUNK))),
                             group_sums(products(w1, vload16(1, a + c * CHUNK))));
    }
    return sums;
  }
  __global const uchar* block = row + b * Q6_K_BYTES;
  __global const char* scales = (__global const char*)(block + 192);
  for (int c = 0; c < 8; ++c) {
    const int half_index = c / 4, quarter = c % 4;
    __global const uchar* ql = block + half_index * 64 + (quarter % 2) * 32;
    __global const uchar* qh = block + 128 + half_index * 32;
    const uchar low_shift = quarter < 2 ? 0 : 4, high_shift = (uchar)(2 * quarter);
    const uchar16 w0 = ((vload16(0, ql) >> low_shift) & (uchar16)0x0f) | (((vload16(0, qh) >> high_shift) & (uchar16)3) << (uchar16)4);
    const uchar16 w1 = ((vload16(1, ql) >> low_shift) & (uchar16)0x0f) | (((vload16(1, qh) >> high_shift) & (uchar16)3) << (uchar16)4);
    sums.lo += scales[2 * c] * group_sums(products(w0, vload16(0, a + c * CHUNK)));
    sums.hi += scales[2 * c + 1] * group_sums(products(w1, vload16(1, a + c * CHUNK)));
  }
  // The CPU stores q + 32 and subtracts 32 * scale * (sum of the 16
  // activations) for groups 2l and 2l + 1 in lane l.
  int corrections[LANES];
  for (int l = 0; l < LANES; ++l) {
    __global const char* chunk = a + l * CHUNK;
    const int4 first = group_sums(convert_short16(vload16(0, chunk))), second = group_sums(convert_short16(vload16(1, chunk)));
    corrections[l] = 32 * ((first.x + first.y + first.z + first.w) * scales[2 * l] +
                           (second.x + second.y + second.z + second.w) * scales[2 * l + 1]);
  }
  sums -= vload8(0, corrections);
  return sums;
}

// The float factors block b's lane sums are scaled by, the same for all
// eight lanes. d, s: the token's chunk fields.
typedef struct {
  float scale;     // weight scale × activation scale
  float min_term;  // Q4_1: the block's minimum term m × s; Q4_K: -(activation scale) × dmin
  int mins[4];     // Q4_K: the CPU's four minimum sums (sub-blocks 2i and 2i + 1)
} BlockFactors;

int q4_k_min(__global const uchar* sc, int j) { return j < 4 ? sc[j + 4] & 0x3f : (sc[j + 4] >> 4) | ((sc[j] >> 2) & 0x30); }

BlockFactors block_factors(int type, __global const uchar* row, long b, __global const float* d, __global const float* s) {
  BlockFactors f;
  f.min_term = 0.0f;
  if (type == WT_Q4_K) {
    __global const uchar* block = row + b * Q4_K_BYTES;
    const float yd = d[b * 8];
    for (int i = 0; i < 4; ++i) {
      f.mins[i] = q4_k_min(block + 4, 2 * i) * (int)s[b * 8 + 2 * i] + q4_k_min(block + 4, 2 * i + 1) * (int)s[b * 8 + 2 * i + 1];
    }
    f.min_term = (-yd) * load_half(block + 2);
    f.scale = yd * load_half(block);
  } else if (type == WT_Q6_K) {
    f.scale = d[b * 8] * load_half(row + b * Q6_K_BYTES + 208);
  } else {
    __global const uchar* block = row + b * legacy_block_bytes(type);
    f.scale = load_half(block) * d[b];
    if (type == WT_Q4_1) f.min_term = load_half(block + 2) * s[b];
  }
  return f;
}

// The row's dot product from its eight lanes, reduced as the CPU's hsum
// reduces a register, then the minimum terms added.
float reduce_lanes(int type, const float* acc, const float* mins) {
  const float total = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  if (type == WT_Q4_1) return total + mins[0];
  if (type == WT_Q4_K) return total + ((mins[0] + mins[2]) + (mins[1] + mins[3]));
  return total;
}

// Global size: (rows rounded up, token groups). xq, xd, xs: the quantized
// activations (n_tokens, cols) and their chunk fields (n_tokens, cols / 32).
__kernel void linear_q8(int type, __global const uchar* w, long row_stride, long rows, long cols,
                        __global const char* xq, __global const float* xd, __global const float* xs, long n_tokens,
                        int has_bias, __global const float* bias, __global float* y) {
  const long row = get_global_id(0);
  const long t0 = get_global_id(1) * TOKENS_PER_ITEM;
  if (row >= rows || t0 >= n_tokens) return;
  const int nt = (int)min((long)TOKENS_PER_ITEM, n_tokens - t0);
  __global const uchar* w_row = w + row * row_stride;
  const long block_elems = is_k_quant(type) ? 256 : CHUNK;
  const long blocks = cols / block_elems, chunks = cols / CHUNK;
  float acc[TOKENS_PER_ITEM][LANES], mins[TOKENS_PER_ITEM][LANES];
  for (int t = 0; t < TOKENS_PER_ITEM; ++t) {
    for (int l = 0; l < LANES; ++l) acc[t][l] = 0.0f, mins[t][l] = 0.0f;
  }
  for (long b = 0; b < blocks; ++b) {
    for (int t = 0; t < nt; ++t) {
      const long token = t0 + t;
      const BlockFactors f = block_factors(type, w_row, b, xd + token * chunks, xs + token * chunks);
      int sums[LANES];
      vstore8(block_lane_sums(type, w_row, b, xq + token * cols), 0, sums);
      for (int l = 0; l < LANES; ++l) {
        const int sumi = sums[l];
        if (type == WT_Q4_K && l < 4) mins[t][l] = fma(f.min_term, (float)f.mins[l], mins[t][l]);
        acc[t][l] = fma(f.scale, (float)sumi, acc[t][l]);
        if (type == WT_Q4_1) mins[t][l] = mins[t][l] + f.min_term;
      }
    }
  }
  for (int t = 0; t < nt; ++t) {
    const float total = reduce_lanes(type, acc[t], mins[t]);
    y[(t0 + t) * rows + row] = has_bias ? total + bias[row] : total;
  }
}

// Float weights against float activations (rounded to f16 or bf16 for f16
// or bf16 weights, as the CPU multiplies them). Global size as linear_q8's.
__kernel void linear_float(int type, __global const uchar* w, long row_stride, long rows, long cols,
                           __global const float* x, long n_tokens, int has_bias, __global const float* bias,
                           __global float* y) {
  const long row = get_global_id(0);
  const long t0 = get_global_id(1) * TOKENS_PER_ITEM;
  if (row >= rows || t0 >= n_tokens) return;
  const int nt = (int)min((long)TOKENS_PER_ITEM, n_tokens - t0);
  __global const uchar* w_row = w + row * row_stride;
  float acc[TOKENS_PER_ITEM];
  for (int t = 0; t < TOKENS_PER_ITEM; ++t) acc[t] = 0.0f;
  for (long c = 0; c < cols / CHUNK; ++c) {
    float v[CHUNK];
    decode_chunk(type, w_row, c, v);
    for (int t = 0; t < nt; ++t) {
      __global const float* xs = x + (t0 + t) * cols + c * CHUNK;
      float sum = acc[t];
      for (int i = 0; i < CHUNK; ++i) {
        float a = xs[i];
        if (type == WT_F16) a = round_half(a);
        if (type == WT_BF16) a = round_bf16(a);
        sum = fma(v[i], a, sum);
      }
      acc[t] = sum;
    }
  }
  for (int t = 0; t < nt; ++t) y[(t0 + t) * rows + row] = has_bias ? acc[t] + bias[row] : acc[t];
}
