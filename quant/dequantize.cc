#include "quant/dequantize.h"

#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/tensor/half.h"
#include "quant/gguf_blocks.h"

namespace tessera {
namespace {

constexpr int kQK = 32;    // elements per block of the legacy formats
constexpr int kQK_K = 256; // elements per super-block of the k-quants

float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

void block_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * float(int(qs[j] & 0x0f) - 8);
    y[j + kQK / 2] = d * float(int(qs[j] >> 4) - 8);
  }
}

void block_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = d * float(qs[j] & 0x0f) + m;
    y[j + kQK / 2] = d * float(qs[j] >> 4) + m;
  }
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Element j of a Q5 block: low nibble from qs, fifth bit from qh.
int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < kQK / 2 ? (qs[j] & 0x0f) : (qs[j - kQK / 2] >> 4);
  return low | int((qh >> j) & 1u) << 4;
}

void block_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < kQK; ++j) y[j] = d * float(q5_value(qs, qh, j) - 16);
}

void block_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < kQK; ++j) y[j] = d * float(q5_value(qs, qh, j)) + m;
}

void block_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < kQK; ++j) y[j] = float(qs[j]) * d;
}

// Two-bit fields of a 32-byte chunk: element (shift * 32 + l) is bits 2*shift of byte l.
int crumb(const uint8_t* chunk, int elem_in_chunk) {
  return (chunk[elem_in_chunk % 32] >> (2 * (elem_in_chunk / 32))) & 3;
}

void block_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80);
  const float dmin = load_f16(b + 82);
  for (int i = 0; i < kQK_K; ++i) {
    const int group = i / 16;
    const float dl = d * float(scales[group] & 0x0f);
    const float ml = dmin * float(scales[group] >> 4);
    const int q = crumb(qs + (i / 128) * 32, i % 128);
    y[i] = dl * float(q) - ml;
  }
}

// The sixteen 6-bit scales of Q3_K, stored as low nibbles plus 2-bit highs.
int q3k_scale(const uint8_t* s, int k) {
  const int low = k < 8 ? (s[k] & 0x0f) : (s[k - 8] >> 4);
  const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return int(int8_t(uint8_t(low | high << 4))) - 32;
}

void block_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* scales = b + 96;
  const float d = load_f16(b + 108);
  for (int i = 0; i < kQK_K; ++i) {
    const float dl = d * float(q3k_scale(scales, i / 16));
    const int low = crumb(qs + (i / 128) * 32, i % 128);
    const bool high_bit = (hmask[i % 32] >> (i / 32)) & 1;
    y[i] = dl * float(low - (high_bit ? 0 : 4));
  }
}

// Scale and min of sub-block j (0..7) of Q4_K / Q5_K, packed in 12 bytes.
void k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 0x3f;
    *min = s[j + 4] & 0x3f;
  } else {
    *scale = (s[j + 4] & 0x0f) | ((s[j - 4] >> 2) & 0x30);
    *min = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
  }
}

// Nibble of element i in a 128-byte area laid out as 4 chunks of 32 bytes,
// each chunk holding 64 elements (low nibbles first).
int k_nibble(const uint8_t* qs, int i) {
  const uint8_t byte = qs[(i / 64) * 32 + i % 32];
  return (i % 64) < 32 ? (byte & 0x0f) : (byte >> 4);
}

void block_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int i = 0; i < kQK_K; ++i) {
    int sc, m;
    k_scale_min(scales, i / 32, &sc, &m);
    y[i] = (d * float(sc)) * float(k_nibble(qs, i)) - dmin * float(m);
  }
}

void block_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const float dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int i = 0; i < kQK_K; ++i) {
    int sc, m;
    k_scale_min(scales, i / 32, &sc, &m);
    const int q = k_nibble(qs, i) | (((qh[i % 32] >> (i / 32)) & 1) << 4);
    y[i] = (d * float(sc)) * float(q) - dmin * float(m);
  }
}

void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int i = 0; i < kQK_K; ++i) {
    const int half = i / 128, r = i % 128;
    const uint8_t low_byte = ql[half * 64 + r % 64];
    const int low = r < 64 ? (low_byte & 0x0f) : (low_byte >> 4);
    const int high = (qh[half * 32 + r % 32] >> (2 * (r / 32))) & 3;
    const int q = int(int8_t(uint8_t(low | high << 4))) - 32;
    y[i] = (d * float(scales[i / 16])) * float(q);
  }
}

void block_mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  const uint8_t* qs = b + 1;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = float(kMxfp4Values[qs[j] & 0x0f]) * d;
    y[j + kQK / 2] = float(kMxfp4Values[qs[j] >> 4]) * d;
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0: return block_q4_0;
    case DType::kQ4_1: return block_q4_1;
    case DType::kQ5_0: return block_q5_0;
    case DType::kQ5_1: return block_q5_1;
    case DType::kQ8_0: return block_q8_0;
    case DType::kQ2_K: return block_q2_k;
    case DType::kQ3_K: return block_q3_k;
    case DType::kQ4_K: return block_q4_k;
    case DType::kQ5_K: return block_q5_k;
    case DType::kQ6_K: return block_q6_k;
    case DType::kMXFP4: return block_mxfp4;
    default: return nullptr;
  }
}

}  // namespace

bool can_dequantize(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 || block_fn(dtype) != nullptr;
}

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n_elems) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, size_t(n_elems) * sizeof(float));
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n_elems; ++i) dst[i] = load_f16(bytes + 2 * i);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n_elems; ++i) {
        uint16_t v;
        std::memcpy(&v, bytes + 2 * i, 2);
        dst[i] = bf16_to_f32(v);
      }
      return;
    default: break;
  }
  const BlockFn fn = block_fn(dtype);
  if (!fn) throw Error("dequantize: no CPU kernel for " + std::string(dtype_name(dtype)));
  const DTypeInfo& info = dtype_info(dtype);
  if (n_elems < 0 || n_elems % info.block_elems != 0) {
    throw Error("dequantize: " + std::to_string(n_elems) + " elements is not a whole number of " +
                std::string(info.name) + " blocks");
  }
  const int64_t n_blocks = n_elems / info.block_elems;
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    fn(bytes + blk * info.block_bytes, dst + blk * info.block_elems);
  }
}

}  // namespace tessera
