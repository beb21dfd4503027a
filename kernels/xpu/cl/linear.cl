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

int dot4(const int* w, __global const char* a) { return w[0] * a[0] + w[1] * a[1] + w[2] * a[2] + w[3] * a[3]; }

bool is_k_quant(int type) { return type == WT_Q4_K || type == WT_Q6_K; }

int legacy_block_bytes(int type) {
  return type == WT_Q4_0 ? Q4_0_BYTES : type == WT_Q4_1 ? Q4_1_BYTES : type == WT_Q5_0 ? Q5_0_BYTES : Q8_0_BYTES;
}

// The integer sum of lane `lane` in block (or super-block) b of the weight
// row times one token's activation row `qs`.
int lane_sumi(int type, __global const uchar* row, long b, int lane, __global const char* qs) {
  int w[4];
  if (type == WT_Q8_0) {
    __global const uchar* q = row + b * Q8_0_BYTES + 2 + 4 * lane;
    for (int i = 0; i < 4; ++i) w[i] = (char)q[i];
    return dot4(w, qs + b * CHUNK + 4 * lane);
  }
  if (!is_k_quant(type)) {
    // Low nibbles are elements 0..15, high nibbles 16..31.
    __global const uchar* block = row + b * legacy_block_bytes(type);
    __global const uchar* q = block + (type == WT_Q4_1 ? 4 : type == WT_Q5_0 ? 6 : 2) + 4 * (lane % 4);
    const int shift = lane < 4 ? 0 : 4;
    const uint qh = type == WT_Q5_0 ? load_u32_bytes(block + 2) : 0;
    for (int i = 0; i < 4; ++i) {
      w[i] = (q[i] >> shift) & 0x0f;
      if (type == WT_Q4_0) w[i] -= 8;
      if (type == WT_Q5_0) w[i] = (w[i] | (int)((qh >> (4 * lane + i)) & 1u) << 4) - 16;
    }
    return dot4(w, qs + b * CHUNK + 4 * lane);
  }
  __global const char* a = qs + b * 256;
  int sumi = 0;
  if (type == WT_Q4_K) {
    __global const uchar* block = row + b * Q4_K_BYTES;
    __global const uchar* sc = block + 4;
    for (int c = 0; c < 8; ++c) {
      const int scale = c < 4 ? sc[c] & 0x3f : (sc[c + 4] & 0x0f) | ((sc[c - 4] >> 2) & 0x30);
      __global const uchar* q = block + 16 + (c / 2) * 32 + 4 * lane;
      const int shift = (c % 2) * 4;
      for (int i = 0; i < 4; ++i) w[i] = (q[i] >> shift) & 0x0f;
      sumi += scale * dot4(w, a + c * CHUNK + 4 * lane);
    }
    return sumi;
  }
  __global const uchar* block = row + b * Q6_K_BYTES;
  __global const char* scales = (__global const char*)(block + 192);
  for (int c = 0; c < 8; ++c) {
    const int half_index = c / 4, quarter = c % 4;
    __global const uchar* ql = block + half_index * 64 + (quarter % 2) * 32 + 4 * lane;
    __global const uchar* qh = block + 128 + half_index * 32 + 4 * lane;
    const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
    for (int i = 0; i < 4; ++i) w[i] = ((ql[i] >> low_shift) & 0x0f) | (((qh[i] >> high_shift) & 3) << 4);
    sumi += scales[2 * c + (lane >= 4)] * dot4(w, a + c * CHUNK + 4 * lane);
  }
  // The CPU stores q + 32 and subtracts 32 * scale * (sum of the 16
  // activations) for groups 2l and 2l + 1 in lane l.
  __global const char* chunk = a + lane * CHUNK;
  int first = 0, second = 0;
  for (int i = 0; i < 16; ++i) first += chunk[i], second += chunk[i + 16];
  return sumi - 32 * (first * scales[2 * lane] + second * scales[2 * lane + 1]);
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
      for (int l = 0; l < LANES; ++l) {
        const int sumi = lane_sumi(type, w_row, b, l, xq + token * cols);
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
