#pragma once
// IntMatrix as bytes, for the artifact cache (engine/io/artifact_cache.h):
// weights quantized at load are stored once and read back on later starts.
// Any change to this encoding, or to IntMatrix's layout, changes the build's
// kernel ABI (engine/CMakeLists.txt), so entries of older builds are ignored.
#include <string>

#include "quant/int_weights.h"

namespace tessera::quant {

std::string encode_int_matrix(const IntMatrix& m);
// Throws tessera::Error when `bytes` is not a whole, consistent encoding
// (every size checked against the shape, with checked arithmetic).
IntMatrix decode_int_matrix(const std::string& bytes);

// Every field of `config` as bytes, for a content key: two configurations
// give the same text exactly when they quantize alike.
std::string int_quant_config_bytes(const IntQuantConfig& config);

}  // namespace tessera::quant
