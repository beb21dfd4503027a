#pragma once
#include <string>

#include "models/tokenizer/tokenizer.h"

namespace tessera {

// The tokenizer of a GGUF file, a Hugging Face model directory, or a
// tokenizer.json file (with tokenizer_config.json read from beside it).
Tokenizer load_tokenizer(const std::string& path);

}  // namespace tessera
