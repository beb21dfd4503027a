#include "models/model.h"

#include <filesystem>

#include "engine/core/error.h"
#include "models/architecture.h"
#include "models/gguf_spec.h"
#include "models/tensor_source.h"

namespace tessera {

std::unique_ptr<Model> Model::load(const std::string& path, Backend& backend, const ModelLoadOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->path_ = path;
  if (std::filesystem::is_directory(path)) model->load_hf(backend, options);
  else model->load_gguf(backend, options);
  // Every id the tokenizer can produce (or a client can name) must have an
  // embedding row; the reverse (padded embedding tables) is common and fine.
  const size_t tokens = model->tokenizer_->vocab().size();
  if (tokens > size_t(model->spec_.vocab_size)) {
    throw Error(path + ": the tokenizer defines " + std::to_string(tokens) + " tokens but the embedding has " +
                std::to_string(model->spec_.vocab_size) + " rows");
  }
  return model;
}

void Model::load_gguf(Backend& backend, const ModelLoadOptions& options) {
  gguf_.emplace(gguf::File::open(path_));
  const std::string arch_name = gguf_->get_string("general.architecture").value_or("");
  if (arch_name.empty()) throw Error(path_ + ": key 'general.architecture': missing");
  const Architecture& arch = find_architecture_for_gguf(arch_name);
  const GgufTensorSource source(*gguf_);
  spec_ = gguf_decoder_spec(*gguf_, arch, source);
  std::vector<std::string> consumed;
  if (!spec_.rope.freq_factors.empty()) consumed.push_back("rope_freqs.weight");
  quantization_ = options.quantize;
  weights_ = bind_weights(spec_, arch.gguf_names, source, backend, consumed,
                          {std::nullopt, options.quantize, options.cache.get(), options.cache_isa}, options.tensor_rank);
  rank_spec_ = tessera::rank_spec(spec_, weights_->shard);
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(*gguf_));
  chat_template_ = gguf_->get_string("tokenizer.chat_template").value_or("");
  sampling_defaults_ = sampling_defaults_from_gguf(*gguf_);
}

void Model::load_hf(Backend& backend, const ModelLoadOptions& options) {
  hf_.emplace(hf::ModelDir::open(path_));
  const std::string model_type = hf_->config().value("model_type", "");
  const Architecture& arch = find_architecture_for_hf(model_type);
  try {
    arch.spec_from_hf(hf_->config(), &spec_);
    refuse_unhonoured_hf_flags(hf_->config(), spec_);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path_ + "/config.json: " + e.what());
  } catch (const Error& e) {
    throw Error(path_ + "/" + e.what());
  }
  spec_.validate(path_);
  const HfTensorSource source(*hf_);
  if (!spec_.tied_embeddings && !source.find(arch.hf_names.output)) spec_.tied_embeddings = true;
  LinearQuantization quantization{quant::read_quantization_config(hf_->config(), path_ + "/config.json"), options.quantize,
                                  options.cache.get(), options.cache_isa};
  if (quantization.stored && quantization.at_load) {
    throw Error(path_ + ": the checkpoint is already quantized (" + quantization.stored->name + "); drop the quantization option");
  }
  quantization_ = quantization.stored ? quantization.stored : quantization.at_load;
  weights_ = bind_weights(spec_, arch.hf_names, source, backend, {}, quantization, options.tensor_rank);
  rank_spec_ = tessera::rank_spec(spec_, weights_->shard);
  if (!hf_->tokenizer_json()) throw Error(path_ + ": no tokenizer.json");
  const std::string config_text = hf_->tokenizer_config() ? hf_->tokenizer_config()->dump() : "";
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_hf_json(*hf_->tokenizer_json(), config_text, path_ + "/tokenizer.json"));
  if (hf_->tokenizer_config() && hf_->tokenizer_config()->contains("chat_template") &&
      (*hf_->tokenizer_config())["chat_template"].is_string()) {
    chat_template_ = (*hf_->tokenizer_config())["chat_template"].get<std::string>();
  }
  if (hf_->generation_config()) {
    sampling_defaults_ = sampling_defaults_from_generation_config(*hf_->generation_config(), path_ + "/generation_config.json");
  }
}

}  // namespace tessera
