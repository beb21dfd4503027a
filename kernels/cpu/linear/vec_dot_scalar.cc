// Reference dot products: integer sums per block, scaled in f32.
#include <cstring>

#include "engine/tensor/half.h"
#include "quant/gguf_blocks.h"
#include "kernels/cpu/linear/vec_dot.h"

namespace tessera::cpu {
namespace {

float dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(y[i]);
  return float(sum);
}

// 16-bit floats (f16, or bf16 against bf16-rounded activations: each
// product exact), summed in f64.
template <float (*widen)(uint16_t)>
float dot_half(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(widen(x[i])) * double(widen(y[i]));
  return float(sum);
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += (int(x[b].qs[j] & 0x0f) - 8) * y[b].qs[j] + (int(x[b].qs[j] >> 4) - 8) * y[b].qs[j + kQK / 2];
    }
    sum += float(sumi) * (f16_to_f32(x[b].d) * f16_to_f32(y[b].d));
  }
  return sum;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) sumi += (x[b].qs[j] & 0x0f) * y[b].qs[j] + (x[b].qs[j] >> 4) * y[b].qs[j + kQK / 2];
    sum += (f16_to_f32(x[b].d) * f16_to_f32(y[b].d)) * float(sumi) + f16_to_f32(x[b].m) * f16_to_f32(y[b].s);
  }
  return sum;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    uint32_t qh;
    std::memcpy(&qh, x[b].qh, 4);
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = int((x[b].qs[j] & 0x0f) | (((qh >> j) & 1) << 4)) - 16;
      const int hi = int((x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
      sumi += lo * y[b].qs[j] + hi * y[b].qs[j + kQK / 2];
    }
    sum += float(sumi) * (f16_to_f32(x[b].d) * f16_to_f32(y[b].d));
  }
  return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x[b].qs[j] * y[b].qs[j];
    sum += float(sumi) * (f16_to_f32(x[b].d) * f16_to_f32(y[b].d));
  }
  return sum;
}

// llama.cpp's order: (activation scale * half the block's scale) * integer sum.
float dot_mxfp4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += kMxfp4Values[x[b].qs[j] & 0x0f] * y[b].qs[j] + kMxfp4Values[x[b].qs[j] >> 4] * y[b].qs[j + kQK / 2];
    }
    sum += (f16_to_f32(y[b].d) * e8m0_half(x[b].e)) * float(sumi);
  }
  return sum;
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t scales[8], mins[8];
    unpack_q4k_scales(x[b].scales, scales, mins);
    int sum_mins = 0;
    for (int g = 0; g < 16; ++g) sum_mins += y[b].bsums[g] * mins[g / 2];
    int sumi = 0;
    for (int i = 0; i < kQK_K; ++i) {
      const uint8_t byte = x[b].qs[(i / 64) * 32 + i % 32];
      const int q = (i % 64) < 32 ? (byte & 0x0f) : (byte >> 4);
      sumi += scales[i / 32] * q * y[b].qs[i];
    }
    sum += f16_to_f32(x[b].d) * y[b].d * float(sumi) - f16_to_f32(x[b].dmin) * y[b].d * float(sum_mins);
  }
  return sum;
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int sumi = 0;
    for (int i = 0; i < kQK_K; ++i) {
      const int half = i / 128, r = i % 128;
      const uint8_t low_byte = x[b].ql[half * 64 + r % 64];
      const int low = r < 64 ? (low_byte & 0x0f) : (low_byte >> 4);
      const int high = (x[b].qh[half * 32 + r % 32] >> (2 * (r / 32))) & 3;
      sumi += x[b].scales[i / 16] * ((low | high << 4) - 32) * y[b].qs[i];
    }
    sum += f16_to_f32(x[b].d) * y[b].d * float(sumi);
  }
  return sum;
}

}  // namespace

std::optional<DType> activation_type_for(DType weight_type) {
  switch (weight_type) {
    case DType::kF32: return DType::kF32;
    case DType::kF16: return DType::kF16;
    case DType::kBF16: return DType::kBF16;
    case DType::kQ4_0: case DType::kQ5_0: case DType::kQ8_0: case DType::kMXFP4: return DType::kQ8_0;
    case DType::kQ4_1: return DType::kQ8_1;
    case DType::kQ4_K: case DType::kQ6_K: return DType::kQ8_K;
    default: return std::nullopt;
  }
}

VecDotKernel scalar_vec_dot(DType weight_type) {
  return pick_vec_dot(weight_type, {{DType::kF32, dot_f32}, {DType::kF16, dot_half<f16_to_f32>}, {DType::kBF16, dot_half<bf16_to_f32>}, {DType::kQ4_0, dot_q4_0},
                                    {DType::kQ4_1, dot_q4_1}, {DType::kQ5_0, dot_q5_0}, {DType::kQ8_0, dot_q8_0},
                                    {DType::kQ4_K, dot_q4_k}, {DType::kQ6_K, dot_q6_k}, {DType::kMXFP4, dot_mxfp4}});
}

VecDotKernel pick_vec_dot(DType weight_type, std::initializer_list<std::pair<DType, VecDotFn>> kernels) {
  const auto act = activation_type_for(weight_type);
  if (!act) return {};
  for (const auto& [type, fn] : kernels) {
    if (type == weight_type) return {*act, fn};
  }
  return {};
}

VecDotKernel select_vec_dot(DType weight_type, const IsaFeatures& isa) {
  const bool avx2 = isa.avx2 && isa.fma && isa.f16c;
  if (avx2 && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512_vnni) {
    const VecDotKernel k = avx512_vec_dot(weight_type);
    if (k.fn) return k;
  }
  if (avx2) {
    const VecDotKernel k = avx2_vec_dot(weight_type);
    if (k.fn) return k;
  }
  return scalar_vec_dot(weight_type);
}

}  // namespace tessera::cpu
