#include "engine/tensor/dtype.h"

#include <array>

#include "engine/core/checked_math.h"

namespace tessera {
namespace {

struct Entry {
  DType dtype;
  uint32_t gguf_id;
  DTypeInfo info;
};

// Block geometry of the GGUF types follows ggml's type traits.
constexpr uint32_t kNoGgufId = UINT32_MAX;

constexpr std::array<Entry, 40> kTable = {{
    {DType::kF32, 0, {"F32", 1, 4, false}},
    {DType::kF16, 1, {"F16", 1, 2, false}},
    {DType::kBF16, 30, {"BF16", 1, 2, false}},
    {DType::kF64, 28, {"F64", 1, 8, false}},
    {DType::kI8, 24, {"I8", 1, 1, false}},
    {DType::kI16, 25, {"I16", 1, 2, false}},
    {DType::kI32, 26, {"I32", 1, 4, false}},
    {DType::kI64, 27, {"I64", 1, 8, false}},
    {DType::kU8, kNoGgufId, {"U8", 1, 1, false}},
    {DType::kU16, kNoGgufId, {"U16", 1, 2, false}},
    {DType::kU32, kNoGgufId, {"U32", 1, 4, false}},
    {DType::kU64, kNoGgufId, {"U64", 1, 8, false}},
    {DType::kBool, kNoGgufId, {"BOOL", 1, 1, false}},
    {DType::kF8_E4M3, kNoGgufId, {"F8_E4M3", 1, 1, false}},
    {DType::kF8_E5M2, kNoGgufId, {"F8_E5M2", 1, 1, false}},
    {DType::kInt4, kNoGgufId, {"INT4", 2, 1, false}},
    {DType::kQ4_0, 2, {"Q4_0", 32, 18, true}},
    {DType::kQ4_1, 3, {"Q4_1", 32, 20, true}},
    {DType::kQ5_0, 6, {"Q5_0", 32, 22, true}},
    {DType::kQ5_1, 7, {"Q5_1", 32, 24, true}},
    {DType::kQ8_0, 8, {"Q8_0", 32, 34, true}},
    {DType::kQ8_1, 9, {"Q8_1", 32, 40, true}},
    {DType::kQ2_K, 10, {"Q2_K", 256, 84, true}},
    {DType::kQ3_K, 11, {"Q3_K", 256, 110, true}},
    {DType::kQ4_K, 12, {"Q4_K", 256, 144, true}},
    {DType::kQ5_K, 13, {"Q5_K", 256, 176, true}},
    {DType::kQ6_K, 14, {"Q6_K", 256, 210, true}},
    {DType::kQ8_K, 15, {"Q8_K", 256, 292, true}},
    {DType::kIQ2_XXS, 16, {"IQ2_XXS", 256, 66, true}},
    {DType::kIQ2_XS, 17, {"IQ2_XS", 256, 74, true}},
    {DType::kIQ3_XXS, 18, {"IQ3_XXS", 256, 98, true}},
    {DType::kIQ1_S, 19, {"IQ1_S", 256, 50, true}},
    {DType::kIQ4_NL, 20, {"IQ4_NL", 32, 18, true}},
    {DType::kIQ3_S, 21, {"IQ3_S", 256, 110, true}},
    {DType::kIQ2_S, 22, {"IQ2_S", 256, 82, true}},
    {DType::kIQ4_XS, 23, {"IQ4_XS", 256, 136, true}},
    {DType::kIQ1_M, 29, {"IQ1_M", 256, 56, true}},
    {DType::kTQ1_0, 34, {"TQ1_0", 256, 54, true}},
    {DType::kTQ2_0, 35, {"TQ2_0", 256, 66, true}},
    {DType::kMXFP4, 39, {"MXFP4", 32, 17, true}},
}};

const Entry& entry_of(DType dtype) {
  for (const Entry& e : kTable) {
    if (e.dtype == dtype) return e;
  }
  return kTable[0];  // unreachable: every enumerator has a row
}

}  // namespace

const DTypeInfo& dtype_info(DType dtype) { return entry_of(dtype).info; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Entry& e : kTable) {
    if (e.info.name == name) return e.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_gguf(uint32_t gguf_type) {
  if (gguf_type == kNoGgufId) return std::nullopt;
  for (const Entry& e : kTable) {
    if (e.gguf_id == gguf_type) return e.dtype;
  }
  return std::nullopt;
}

uint32_t dtype_to_gguf(DType dtype) { return entry_of(dtype).gguf_id; }

std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t elems) {
  const DTypeInfo& info = dtype_info(dtype);
  if (elems % info.block_elems != 0) return std::nullopt;
  return checked_mul(elems / info.block_elems, info.block_bytes);
}

}  // namespace tessera
