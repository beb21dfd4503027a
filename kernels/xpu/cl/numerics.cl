// Arithmetic shared by every kernel of the program. Each product and sum is
// rounded on its own unless fma() is written, so that results have the CPU
// backend's bits: contraction into fused multiply-adds is switched off.
#pragma OPENCL FP_CONTRACT OFF

// Sums that the CPU keeps in double stay in double where the device has it.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double wide_float;
#else
typedef float wide_float;
#endif

#define CHUNK 32

float half_bits_to_float(ushort h) {
  const uint sign = (uint)(h & 0x8000) << 16;
  const uint exponent = (h >> 10) & 0x1f;
  const uint mantissa = h & 0x3ff;
  if (exponent == 0x1f) return as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return as_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in f32.
  const float magnitude = (float)mantissa * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// To the nearest half, ties to even (engine/tensor/half.h's f32_to_f16).
ushort float_to_half_bits(float f) {
  const uint bits = as_uint(f);
  const uint sign = (bits >> 16) & 0x8000;
  const uint abs_bits = bits & 0x7fffffff;
  if (abs_bits >= 0x7f800000) return (ushort)(sign | 0x7c00 | (abs_bits > 0x7f800000 ? 0x200 : 0));
  if (abs_bits >= 0x477ff000) return (ushort)(sign | 0x7c00);
  if (abs_bits < 0x38800000) return (ushort)(sign | (uint)rint(as_float(abs_bits) * 16777216.0f));
  const uint rounded = abs_bits + 0xfff + ((abs_bits >> 13) & 1);
  return (ushort)(sign | ((rounded - (112u << 23)) >> 13));
}

float round_half(float v) { return half_bits_to_float(float_to_half_bits(v)); }

// To the nearest bf16, ties to even (finite inputs).
float round_bf16(float v) {
  const uint bits = as_uint(v);
  return as_float((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
}

// Blocks are only 2-byte aligned: fields are read byte by byte.
float load_half(__global const uchar* p) { return half_bits_to_float((ushort)(p[0] | (p[1] << 8))); }

uint load_u32_bytes(__global const uchar* p) {
  return (uint)p[0] | (uint)p[1] << 8 | (uint)p[2] << 16 | (uint)p[3] << 24;
}

// The CPU kernels' exponential (kernels/cpu/elementwise/vector_exp.h), operation for operation.
float vector_expf(float x) {
  const float shift = 0x1.8p23f;
  const float z = fma(x, 0x1.715476p+0f, shift);
  const float n = z - shift;
  const float b = fma(-n, 0x1.7f7d1cp-20f, fma(-n, 0x1.62e4p-1f, x));
  if (fabs(n) > 192.0f) return n > 0.0f ? INFINITY : 0.0f;
  const float u = b * b;
  const float j = fma(fma(fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                      fma(0x1.ffffecp-1f, b, 1.0f));
  const int e = (int)n;
  if (e >= -126 && e <= 127) return j * as_float((uint)(e + 127) << 23);
  return ldexp(j, e);
}

// tanh correctly rounded where the device has double, as the CPU's library gives it.
float tanh_rounded(float x) { return (float)tanh((wide_float)x); }

// The CPU's reduction of 16 lane sums (kernels/cpu/attention/lane_sum.h): halves,
// quarters, then pairs.
float reduce_16_lanes(const float* a) {
  float t3[8], t6[4];
  for (int i = 0; i < 8; ++i) t3[i] = a[i + 8] + a[i];
  for (int i = 0; i < 4; ++i) t6[i] = t3[i + 4] + t3[i];
  return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}
