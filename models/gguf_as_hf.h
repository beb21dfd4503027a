#pragma once
// A GGUF checkpoint seen as the Hugging Face directory of the same model:
// config.json from its metadata, tokenizer.json and tokenizer_config.json
// from its vocabulary, and its tensors under Hugging Face names in Hugging
// Face's layout. `tessera quantize` reads a GGUF file through this, as
// llama.cpp's requantization does: block formats are dequantized to f32.
//
// Layout changes from GGUF:
//   q, k (and their biases)  llama.cpp's converter interleaves the two rotary
//                            halves of each Llama/Mistral head; rows go back
//                            to (first half, second half)
//   norms                    weight + (GGUF's norm offset - Hugging Face's)
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/architecture.h"
#include "models/gguf/gguf_file.h"
#include "models/tensor_source.h"

namespace tessera {

class GgufAsHf final : public TensorSource {
 public:
  // Throws tessera::Error naming the file when the architecture or the
  // tokenizer has no Hugging Face form here, or a tensor has no Hugging
  // Face name.
  explicit GgufAsHf(const std::string& path);
  GgufAsHf(const GgufAsHf&) = delete;  // the tensor source reads file_ in place
  GgufAsHf& operator=(const GgufAsHf&) = delete;

  const nlohmann::json& config() const { return config_; }
  // tokenizer.json, tokenizer_config.json, generation_config.json: file name -> text.
  const std::map<std::string, std::string>& text_files() const { return text_files_; }

  // TensorSource over the Hugging Face names. A tensor the layout changes is
  // computed (f32) on first use and kept; the source is not thread-safe.
  std::optional<SourceTensor> find(const std::string& name) const override;
  const std::string& name() const override { return file_.name(); }
  std::vector<std::string> names() const override;

 private:
  enum class Change : uint8_t { kNone, kUnpairRotaryRows, kShiftNorm };
  struct Mapped {
    std::string gguf_name;
    Change change = Change::kNone;
    int heads = 0;  // kUnpairRotaryRows: heads in the matrix
  };
  void map_tensors(const Architecture& arch);
  void write_text_files();
  SourceTensor changed(const std::string& name, const Mapped& m, const SourceTensor& raw) const;

  gguf::File file_;
  GgufTensorSource raw_;
  DecoderSpec gguf_spec_, hf_spec_;
  nlohmann::json config_;
  std::map<std::string, std::string> text_files_;
  std::vector<std::string> hf_order_;  // Hugging Face names in file order
  std::map<std::string, Mapped> by_hf_name_;
  mutable std::map<std::string, std::vector<float>> changed_;
};

}  // namespace tessera
