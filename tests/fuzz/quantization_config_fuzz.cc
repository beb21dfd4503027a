// libFuzzer target: any config.json text either yields a quantization scheme,
// none, or a tessera::Error naming the key.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "quant/schemes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json config = nlohmann::json::parse(data, data + size, nullptr, false);
  if (config.is_discarded()) return 0;
  try {
    (void)tessera::quant::read_quantization_config(config, "fuzz");
  } catch (const tessera::Error&) {
  }
  return 0;
}
