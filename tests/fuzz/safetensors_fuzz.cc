// libFuzzer target: the safetensors reader must turn any input into either a
// File or a tessera::Error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/core/error.h"
#include "models/safetensors/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tessera::safetensors::File file = tessera::safetensors::File::parse(std::span(data, size), "fuzz");
    for (const auto& t : file.tensors()) (void)file.tensor_bytes(t);
  } catch (const tessera::Error&) {
  }
  return 0;
}
