#pragma once
// AutoAWQ's GEMM and AutoGPTQ's 4-bit linears unpacked into this project's
// integer layout (quant/int_weights.h); the packings are described in
// scripts/gen_awq_gptq_fixtures.py, which writes the test checkpoints.
#include <cstdint>
#include <string>
#include <vector>

#include "quant/int_weights.h"

namespace tessera::quant {

struct PackedLinear {
  const int32_t* qweight;  // AWQ (in, out/8); GPTQ (in/8, out)
  const int32_t* qzeros;   // (groups, out/8)
  const float* scales;     // (groups, out)
  const int32_t* g_idx;    // GPTQ (in), or null: input i is in group i / group_size
};

struct UnpackedLinear {
  IntMatrix matrix;                  // (out, in), columns in input_order when it is set
  std::vector<int32_t> input_order;  // GPTQ act-order: column c holds input input_order[c]; else empty
};

// Throws tessera::Error naming `name` for shapes, zero points or group
// indices the format does not allow.
UnpackedLinear unpack_awq(const std::string& name, const PackedLinear& p, int64_t out, int64_t in, int64_t group);
UnpackedLinear unpack_gptq(const std::string& name, const PackedLinear& p, int64_t out, int64_t in, int64_t group,
                           bool zero_offset);

}  // namespace tessera::quant
