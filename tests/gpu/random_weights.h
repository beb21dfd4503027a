#pragma once
// Random activations and weights for the accelerator tests and benchmarks.
#include <cstdint>
#include <random>
#include <vector>

#include "engine/tensor/dtype.h"

namespace tessera::test {

std::vector<float> normal_values(std::mt19937& rng, size_t n, float stddev = 1.0f);

// Random blocks of `dtype` (any chunk-decodable format) whose scale fields
// hold small finite halves.
std::vector<uint8_t> random_blocks(std::mt19937& rng, DType dtype, int64_t n_elems);

}  // namespace tessera::test
