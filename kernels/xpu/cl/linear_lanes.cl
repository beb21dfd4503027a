// Decode-sized linears on devices with Intel sub-groups (compiled only where
// the host defines XPU_INTEL_SUBGROUPS): the eight lanes of a row are eight
// work-items, so neighbouring work-items read neighbouring bytes of a
// block, and the lanes are reduced by sub-group shuffles in the CPU's order
// (reduce_lanes in linear.cl). A 16-wide sub-group holds two rows; every
// Intel GPU offers that width. Same arithmetic, same bits as linear_q8.
#ifdef XPU_INTEL_SUBGROUPS
#pragma OPENCL EXTENSION cl_intel_subgroups : enable

#define LANE_ROWS_PER_GROUP 8  // work-group: 8 rows × 8 lanes

int dot4(char4 w, char4 a) {
  const int4 p = convert_int4(w) * convert_int4(a);
  return (p.x + p.y) + (p.z + p.w);
}

// Elements 4l .. 4l + 3 of a 32-element block of a legacy format.
char4 legacy_lane_values(int type, __global const uchar* block, int lane) {
  if (type == WT_Q8_0) return vload4(0, (__global const char*)(block + 2 + 4 * lane));
  // Low nibbles are elements 0..15, high nibbles 16..31.
  const uchar4 q = vload4(0, block + (type == WT_Q4_1 ? 4 : type == WT_Q5_0 ? 6 : 2) + 4 * (lane % 4));
  char4 v = as_char4((lane < 4 ? q : q >> (uchar4)4) & (uchar4)0x0f);
  if (type == WT_Q4_0) return v - (char4)8;
  if (type == WT_Q5_0) {
    const uint qh = load_u32_bytes(block + 2) >> (4 * lane);
    const char4 high = (char4)((qh & 1u) << 4, ((qh >> 1) & 1u) << 4, ((qh >> 2) & 1u) << 4, ((qh >> 3) & 1u) << 4);
    return (v | high) - (char4)16;
  }
  return v;
}

// Lane `lane`'s integer sum in block (or super-block) b of the weight row
// times one token's activation row `qs`.
int lane_sumi(int type, __global const uchar* row, long b, int lane, __global const char* qs) {
  if (!is_k_quant(type)) {
    return dot4(legacy_lane_values(type, row + b * legacy_block_bytes(type), lane), vload4(0, qs + b * CHUNK + 4 * lane));
  }
  __global const char* a = qs + b * 256;
  int sumi = 0;
  if (type == WT_Q4_K) {
    __global const uchar* block = row + b * Q4_K_BYTES;
    __global const uchar* sc = block + 4;
    for (int c = 0; c < 8; ++c) {
      const int scale = c < 4 ? sc[c] & 0x3f : (sc[c + 4] & 0x0f) | ((sc[c - 4] >> 2) & 0x30);
      const uchar4 q = vload4(0, block + 16 + (c / 2) * 32 + 4 * lane) >> (uchar4)((c % 2) * 4);
      sumi += scale * dot4(as_char4(q & (uchar4)0x0f), vload4(0, a + c * CHUNK + 4 * lane));
    }
    return sumi;
  }
  __global const uchar* block = row + b * Q6_K_BYTES;
  __global const char* scales = (__global const char*)(block + 192);
  for (int c = 0; c < 8; ++c) {
    const int half_index = c / 4, quarter = c % 4;
    const uchar4 ql = vload4(0, block + half_index * 64 + (quarter % 2) * 32 + 4 * lane);
    const uchar4 qh = vload4(0, block + 128 + half_index * 32 + 4 * lane);
    const uchar4 w = ((ql >> (uchar4)(quarter < 2 ? 0 : 4)) & (uchar4)0x0f) | (((qh >> (uchar4)(2 * quarter)) & (uchar4)3) << (uchar4)4);
    sumi += scales[2 * c + (lane >= 4)] * dot4(as_char4(w), vload4(0, a + c * CHUNK + 4 * lane));
  }
  // The CPU stores q + 32 and subtracts 32 * scale * (sum of the 16
  // activations) for groups 2l and 2l + 1 in lane l.
  __global const char* chunk = a + lane * CHUNK;
  const int4 first = group_sums(convert_short16(vload16(0, chunk))), second = group_sums(convert_short16(vload16(1, chunk)));
  return sumi - 32 * ((first.x + first.y + first.z + first.w) * scales[2 * lane] +
                      (second.x + second.y + second.z + second.w) * scales[2 * lane + 1]);
}

// Global size: (rows × 8 rounded up to whole groups, tokens). Work-items of
// rows past the end compute the last row and store nothing, so that every
// sub-group stays whole for its shuffles.
__kernel __attribute__((intel_reqd_sub_group_size(16))) __attribute__((reqd_work_group_size(LANE_ROWS_PER_GROUP * LANES, 1, 1)))
void linear_q8_lanes(int type, __global const uchar* w, long row_stride, long rows, long cols, __global const char* xq,
                     __global const float* xd, __global const float* xs, long n_tokens, int has_bias,
                     __global const float* bias, __global float* y) {
  const long item_row = get_global_id(0) / LANES, token = get_global_id(1);
  const long row = min(item_row, rows - 1);
  const int lane = (int)(get_global_id(0) % LANES);
  __global const uchar* w_row = w + row * row_stride;
  const long blocks = cols / (is_k_quant(type) ? 256 : CHUNK), chunks = cols / CHUNK;
  __global const char* qs = xq + token * cols;
  __global const float* d = xd + token * chunks;
  __global const float* s = xs + token * chunks;
  float acc = 0.0f, mins = 0.0f;
  for (long b = 0; b < blocks; ++b) {
    const BlockFactors f = block_factors(type, w_row, b, d, s);
    const int sumi = lane_sumi(type, w_row, b, lane, qs);
    if (type == WT_Q4_K && lane < 4) mins = fma(f.min_term, (float)f.mins[lane], mins);
    acc = fma(f.scale, (float)sumi, acc);
    if (type == WT_Q4_1) mins = mins + f.min_term;
  }
  // ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), as reduce_lanes.
  acc = acc + intel_sub_group_shuffle_xor(acc, 4);
  acc = acc + intel_sub_group_shuffle_xor(acc, 2);
  acc = acc + intel_sub_group_shuffle_xor(acc, 1);
  if (type == WT_Q4_K) {
    // Lanes 4..7 hold zeros; lane 0 ends with (m0 + m2) + (m1 + m3).
    mins = mins + intel_sub_group_shuffle_xor(mins, 2);
    mins = mins + intel_sub_group_shuffle_xor(mins, 1);
  }
  if (lane != 0 || item_row >= rows) return;
  const float total = type == WT_Q4_1 || type == WT_Q4_K ? acc + mins : acc;
  y[token * rows + row] = has_bias ? total + bias[row] : total;
}

#endif  // XPU_INTEL_SUBGROUPS
