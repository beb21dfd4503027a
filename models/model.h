#pragma once
// A loaded model: the checkpoint (kept mapped), its typed spec, bound weights
// and tokenizer. Loading validates everything; nothing is checked later.
#include <memory>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "models/decoder_spec.h"
#include "engine/io/artifact_cache.h"
#include "models/decoder_weights.h"
#include "models/gguf/gguf_file.h"
#include "models/hf/hf_model_dir.h"
#include "models/model_sampling_defaults.h"
#include "models/tokenizer/tokenizer.h"

namespace tessera {

class TensorSource;

struct ModelLoadOptions {
  // Quantize the linear weights to this scheme as they load (a checkpoint
  // that is already quantized is refused).
  std::optional<quant::SchemeChoice> quantize;
  // Load only this rank's part of the weights.
  TensorRank tensor_rank;
  // Where weights quantized at load are kept between starts (null: none),
  // and the host ISA their keys name.
  std::shared_ptr<const ArtifactCache> cache;
  std::string cache_isa;
};

class Model {
 public:
  // A GGUF file or a Hugging Face directory, its weights prepared for
  // `backend` (which must outlive the model). Throws tessera::Error.
  static std::unique_ptr<Model> load(const std::string& path, Backend& backend, const ModelLoadOptions& options = {});
  // The scheme the linear weights run in; nullopt for the checkpoint's own formats.
  const std::optional<quant::SchemeChoice>& quantization() const { return quantization_; }

  const std::string& path() const { return path_; }
  const DecoderSpec& spec() const { return spec_; }
  // The spec of the part this process runs: spec() unless tensor-parallel.
  const DecoderSpec& rank_spec() const { return rank_spec_; }
  const DecoderWeights& weights() const { return *weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& chat_template() const { return chat_template_; }
  // What the checkpoint recommends for requests that leave sampling fields out.
  const ModelSamplingDefaults& sampling_defaults() const { return sampling_defaults_; }

 private:
  Model() = default;
  void load_gguf(Backend& backend, const ModelLoadOptions& options);
  void load_hf(Backend& backend, const ModelLoadOptions& options);

  std::string path_;
  std::optional<gguf::File> gguf_;
  std::optional<hf::ModelDir> hf_;
  DecoderSpec spec_;
  DecoderSpec rank_spec_;
  std::unique_ptr<DecoderWeights> weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string chat_template_;
  ModelSamplingDefaults sampling_defaults_;
  std::optional<quant::SchemeChoice> quantization_;
};

}  // namespace tessera
