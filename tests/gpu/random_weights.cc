#include "tests/gpu/random_weights.h"

#include <cstring>

#include "engine/tensor/half.h"

namespace tessera::test {

std::vector<float> normal_values(std::mt19937& rng, size_t n, float stddev) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random blocks of `dtype` whose scale fields hold small finite halves.
std::vector<uint8_t> random_blocks(std::mt19937& rng, DType dtype, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(dtype);
  std::vector<uint8_t> bytes(size_t(n_elems / info.block_elems * info.block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = uint8_t(byte(rng));
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  auto set_half = [&](size_t at, float value) {
    const uint16_t h = f32_to_f16(value);
    std::memcpy(&bytes[at], &h, 2);
  };
  std::vector<size_t> half_fields;
  switch (dtype) {
    case DType::kF16:
      for (size_t i = 0; i < bytes.size(); i += 2) set_half(i, scale(rng) * 50.0f);
      return bytes;
    case DType::kBF16:
      for (size_t i = 0; i < bytes.size(); i += 2) {
        const uint16_t b = f32_to_bf16(scale(rng) * 50.0f);
        std::memcpy(&bytes[i], &b, 2);
      }
      return bytes;
    case DType::kF32:
      for (size_t i = 0; i < bytes.size(); i += 4) {
        const float f = scale(rng) * 50.0f;
        std::memcpy(&bytes[i], &f, 4);
      }
      return bytes;
    case DType::kQ4_1:
    case DType::kQ4_K: half_fields = {0, 2}; break;
    case DType::kQ6_K: half_fields = {208}; break;
    default: half_fields = {0}; break;
  }
  for (size_t block = 0; block < bytes.size(); block += info.block_bytes) {
    for (size_t f : half_fields) set_half(block + f, scale(rng));
  }
  return bytes;
}

}  // namespace tessera::test
