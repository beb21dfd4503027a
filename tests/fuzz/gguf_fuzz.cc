// libFuzzer target: the GGUF reader, and the tokenizer loader and the
// architecture's reading of its keys (experts, rope scaling, windows) on
// whatever it accepts, must turn any input into either a result or a
// tessera::Error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tessera::gguf::File file = tessera::gguf::File::parse(std::span(data, size), "fuzz");
    for (const auto& t : file.tensors()) (void)file.tensor_bytes(t);
    if (file.find("tokenizer.ggml.model")) {
      const tessera::Tokenizer tokenizer = tessera::Tokenizer::from_gguf(file);
      (void)tokenizer.encode("Hello world 123 \xe4\xbd\xa0\xe5\xa5\xbd");
    }
    if (const auto arch = file.get_string("general.architecture")) {
      tessera::DecoderSpec spec;
      tessera::find_architecture_for_gguf(*arch).spec_from_gguf(file, &spec);
      spec.validate("fuzz");
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
