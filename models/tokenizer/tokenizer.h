#pragma once
// Text to token ids and back, for SentencePiece and BPE vocabularies loaded
// from GGUF metadata or a Hugging Face tokenizer.json.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/regex.h"
#include "models/tokenizer/vocab.h"

namespace tessera {

namespace gguf {
class File;
}

struct EncodeOptions {
  bool add_special = false;    // BOS/EOS as the vocabulary asks
  bool parse_special = false;  // control tokens written in the text become those tokens
};

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);

  static Tokenizer from_gguf(const gguf::File& file);
  // `tokenizer_json` is the text of tokenizer.json; `config_json` that of
  // tokenizer_config.json (may be empty).
  static Tokenizer from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                const std::string& source);

  std::vector<TokenId> encode(std::string_view text, EncodeOptions options = {}) const;

  // The bytes a token stands for. Control tokens give their text only when
  // `render_special` is set.
  std::string token_bytes(TokenId id, bool render_special = false) const;
  std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const;

  const Vocab& vocab() const { return vocab_; }
  std::string kind_name() const;

 private:
  struct Fragment {
    std::string_view text;  // raw text when token == kNoToken
    TokenId token = kNoToken;
  };
  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  void encode_text(std::string_view text, bool after_special, std::vector<TokenId>* out) const;

  Vocab vocab_;
  std::vector<Regex> pre_regexes_;
  std::vector<TokenId> specials_by_length_;  // longest text first
};

}  // namespace tessera
