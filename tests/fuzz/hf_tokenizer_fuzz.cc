// libFuzzer target: any bytes as tokenizer.json either load into a tokenizer
// (which must then encode and decode without a crash) or give a tessera::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/core/error.h"
#include "models/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const tessera::Tokenizer tokenizer = tessera::Tokenizer::from_hf_json(text, "", "fuzz.json");
    const auto ids = tokenizer.encode("Hello world 123 \xe4\xbd\xa0\xe5\xa5\xbd <|x|>", {.add_special = true, .parse_special = true});
    (void)tokenizer.decode(ids, true);
  } catch (const tessera::Error&) {
  }
  return 0;
}
