#pragma once
// Element types of tensors: plain floats and integers, packed int4 and the
// GGUF block-quantised formats. A block type stores `block_elems` elements in
// `block_bytes` bytes; plain types are blocks of one element.
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : uint8_t {
  kF32, kF16, kBF16, kF64,
  kI8, kI16, kI32, kI64,
  kU8, kU16, kU32, kU64, kBool,
  kF8_E4M3, kF8_E5M2,
  kInt4,  // two signed 4-bit values per byte, low nibble first
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ8_1,
  kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kQ8_K,
  kIQ2_XXS, kIQ2_XS, kIQ3_XXS, kIQ1_S, kIQ4_NL, kIQ3_S, kIQ2_S, kIQ4_XS, kIQ1_M,
  kTQ1_0, kTQ2_0,
  kMXFP4,  // OCP microscaling FP4: 32 E2M1 values sharing an E8M0 scale (gpt-oss experts)
};

struct DTypeInfo {
  std::string_view name;
  uint32_t block_elems;
  uint32_t block_bytes;
  bool quantized;  // true for the GGUF block formats
};

const DTypeInfo& dtype_info(DType dtype);
inline std::string_view dtype_name(DType dtype) { return dtype_info(dtype).name; }

// By the names above (also safetensors' dtype strings: "F16", "BF16", "U8" …).
std::optional<DType> dtype_from_name(std::string_view name);

// GGUF's numeric type ids (ggml_type). Unknown ids give nullopt.
std::optional<DType> dtype_from_gguf(uint32_t gguf_type);
uint32_t dtype_to_gguf(DType dtype);

// Byte size of `elems` elements, or nullopt when `elems` is not a whole number
// of blocks or the size overflows.
std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t elems);

}  // namespace tessera
