#pragma once
// A loaded model: the checkpoint (kept mapped), its typed spec, bound weights
// and tokenizer. Loading validates everything; nothing is checked later.
#include <memory>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "models/decoder_spec.h"
#include "models/decoder_weights.h"
#include "models/gguf/gguf_file.h"
#include "models/hf/hf_model_dir.h"
#include "models/tokenizer/tokenizer.h"

namespace tessera {

class TensorSource;

class Model {
 public:
  // A GGUF file or a Hugging Face directory, its weights prepared for
  // `backend` (which must outlive the model). Throws tessera::Error.
  static std::unique_ptr<Model> load(const std::string& path, Backend& backend);

  const std::string& path() const { return path_; }
  const DecoderSpec& spec() const { return spec_; }
  const DecoderWeights& weights() const { return *weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& chat_template() const { return chat_template_; }

 private:
  Model() = default;
  void load_gguf(Backend& backend);
  void load_hf(Backend& backend);
  void read_rope_freq_factors(const TensorSource& source);

  std::string path_;
  std::optional<gguf::File> gguf_;
  std::optional<hf::ModelDir> hf_;
  DecoderSpec spec_;
  std::unique_ptr<DecoderWeights> weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string chat_template_;
};

}  // namespace tessera
