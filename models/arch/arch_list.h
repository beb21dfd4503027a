#pragma once
// The architecture files, one function each.
#include "models/architecture.h"

namespace tessera {

Architecture llama_architecture();
Architecture mistral_architecture();
Architecture qwen2_architecture();
Architecture gemma3_architecture();

}  // namespace tessera
