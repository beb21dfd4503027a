#pragma once
// A served model's tokenizer as the Hugging Face files that describe it, for
// clients that tokenize on their side (lm-evaluation-harness, aiperf):
//   GET /tokenizer_info?model=NAME   vLLM's answer: tokenizer_config.json's
//                                    fields (special tokens, BOS/EOS policy,
//                                    chat template) and tokenizer_class
//   GET /tokenizer.json?model=NAME   the tokenizer itself
// Saved as tokenizer_config.json and tokenizer.json in one folder, they load
// with transformers' AutoTokenizer. Each is built once per model and kept.
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "server/serving/api_context.h"

namespace tessera {

class TokenizerFiles {
 public:
  // The JSON text of `file` ("tokenizer_info" or "tokenizer.json") for the
  // model; 400 naming the model when its vocabulary has no tokenizer.json
  // form (SentencePiece vocabularies).
  const std::string& text(const ServedModel& model, const std::string& file);

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> texts_;  // model name + fingerprint + file -> JSON text
};

// The percent-decoded value of `key` in a request target's query ("" when
// absent or malformed).
std::string query_parameter(std::string_view target, std::string_view key);

}  // namespace tessera
