#pragma once
// The decoder spec of a GGUF file: what its architecture reads from the
// metadata, completed as llama.cpp completes it from the tensors present
// (optional biases, the vocabulary size, a tied output, Llama 3 rope factors).
#include "models/architecture.h"
#include "models/tensor_source.h"

namespace tessera {

// Throws tessera::Error naming the file when the spec is incomplete or a
// tensor it reads is malformed.
DecoderSpec gguf_decoder_spec(const gguf::File& file, const Architecture& arch, const TensorSource& source);

}  // namespace tessera
