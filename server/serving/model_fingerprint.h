#pragma once
// OpenAI's `system_fingerprint` for one served model: it changes when the
// build, the model's files (names, sizes, modification times) or the settings
// it is served with change, so a client can tell that the same seed may no
// longer give the same output. Read from file metadata, not the weights.
#include <string>

#include "config/config.h"

namespace tessera {

// "fp_" and 16 hex digits.
std::string model_fingerprint(const ModelConfig& config, const std::string& chat_template_source);

}  // namespace tessera
