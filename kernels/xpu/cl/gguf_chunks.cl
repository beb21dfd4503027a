// Decoding of weight rows 32 elements at a time: one legacy GGUF block
// (Q4_0, Q4_1, Q5_0, Q8_0), one of the eight sub-blocks of a k-quant
// super-block (Q4_K, Q6_K), or 32 plain elements (F32, F16, BF16). Each
// product and sum is rounded on its own, as the CPU's dequantize_row rounds
// it. The WT_* codes come from the host (kernels/xpu/program_source.cc).

// Block sizes in bytes.
#define Q4_0_BYTES 18
#define Q4_1_BYTES 20
#define Q5_0_BYTES 22
#define Q8_0_BYTES 34
#define Q4_K_BYTES 144
#define Q6_K_BYTES 210

// Elements 32c .. 32c + 31 of the row at `row` into v[0..31].
void decode_chunk(int type, __global const uchar* row, long c, float* v) {
  if (type == WT_F32) {
    __global const float* p = (__global const float*)(row + c * CHUNK * 4);
    for (int i = 0; i < CHUNK; ++i) v[i] = p[i];
  } else if (type == WT_F16 || type == WT_BF16) {
    __global const ushort* p = (__global const ushort*)(row + c * CHUNK * 2);
    for (int i = 0; i < CHUNK; ++i) v[i] = type == WT_F16 ? half_bits_to_float(p[i]) : as_float((uint)p[i] << 16);
  } else if (type == WT_Q4_0) {
    __global const uchar* b = row + c * Q4_0_BYTES;
    const float d = load_half(b);
    for (int j = 0; j < CHUNK / 2; ++j) {
      const uchar q = b[2 + j];
      v[j] = d * (float)((int)(q & 0x0f) - 8);
      v[j + CHUNK / 2] = d * (float)((int)(q >> 4) - 8);
    }
  } else if (type == WT_Q4_1) {
    __global const uchar* b = row + c * Q4_1_BYTES;
    const float d = load_half(b), m = load_half(b + 2);
    for (int j = 0; j < CHUNK / 2; ++j) {
      const uchar q = b[4 + j];
      v[j] = d * (float)(q & 0x0f) + m;
      v[j + CHUNK / 2] = d * (float)(q >> 4) + m;
    }
  } else if (type == WT_Q5_0) {
    __global const uchar* b = row + c * Q5_0_BYTES;
    const float d = load_half(b);
    const uint qh = load_u32_bytes(b + 2);
    for (int j = 0; j < CHUNK / 2; ++j) {
      const uchar q = b[6 + j];
      const int lo = (int)(q & 0x0f) | (int)((qh >> j) & 1u) << 4;
      const int hi = (int)(q >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
      v[j] = d * (float)(lo - 16);
      v[j + CHUNK / 2] = d * (float)(hi - 16);
    }
  } else if (type == WT_Q8_0) {
    __global const uchar* b = row + c * Q8_0_BYTES;
    const float d = load_half(b);
    for (int j = 0; j < CHUNK; ++j) v[j] = (float)(char)b[2 + j] * d;
  } else if (type == WT_Q4_K) {
    // Sub-block j of the super-block: its own 6-bit scale and minimum; its
    // nibbles are the low (even j) or high (odd j) halves of 32 bytes.
    __global const uchar* b = row + (c / 8) * Q4_K_BYTES;
    const int j = (int)(c % 8);
    const float d = load_half(b), dmin = load_half(b + 2);
    __global const uchar* s = b + 4;
    int sc, m;
    if (j < 4) {
      sc = s[j] & 0x3f;
      m = s[j + 4] & 0x3f;
    } else {
      sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 2) & 0x30);
      m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
    }
    const float scale = d * (float)sc, offset = dmin * (float)m;
    __global const uchar* qs = b + 16 + (j / 2) * 32;
    const int shift = (j % 2) * 4;
    for (int l = 0; l < CHUNK; ++l) v[l] = scale * (float)((qs[l] >> shift) & 0x0f) - offset;
  } else if (type == WT_Q6_K) {
    // Chunk j: half j / 4 of the super-block; low nibbles from ql, two high
    // bits from qh, one scale per 16 elements.
    __global const uchar* b = row + (c / 8) * Q6_K_BYTES;
    const int j = (int)(c % 8), half_index = j / 4, quarter = j % 4;
    const float d = load_half(b + 208);
    __global const uchar* ql = b + half_index * 64 + (quarter % 2) * 32;
    __global const uchar* qh = b + 128 + half_index * 32;
    __global const char* scales = (__global const char*)(b + 192) + j * 2;
    const float s0 = d * (float)scales[0], s1 = d * (float)scales[1];
    const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
    for (int l = 0; l < CHUNK; ++l) {
      const int q = (((ql[l] >> low_shift) & 0x0f) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
      v[l] = (l < 16 ? s0 : s1) * (float)q;
    }
  }
}
