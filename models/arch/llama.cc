// Llama 2/3, SmolLM2 and other Llama-shaped models.
#include "models/architecture.h"
#include "models/gguf/gguf_file.h"

namespace tessera {
namespace {

void llama_from_gguf(const gguf::File& file, DecoderSpec* spec) {
  fill_common_gguf(file, "llama", spec);
  // llama.cpp's converter permutes Q and K so rotation pairs are adjacent.
  spec->rope.pairing = RotaryPairing::kAdjacent;
}

void llama_from_hf(const nlohmann::json& config, DecoderSpec* spec) { fill_common_hf(config, spec); }

}  // namespace

Architecture llama_architecture() {
  return {"llama", {"llama"}, llama_from_gguf, llama_from_hf, standard_gguf_names(), llama_hf_names()};
}

}  // namespace tessera
