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

// Bytes [begin, end) of a text.
struct ByteRange {
  size_t begin = 0, end = 0;
};

struct EncodeOptions {
  bool add_special = false;    // BOS/EOS as the vocabulary asks
  bool parse_special = false;  // control tokens written in the text become those tokens
  // With parse_special: parts of the text (sorted, disjoint) where control
  // tokens stay plain text, e.g. what a client wrote inside a chat message.
  const std::vector<ByteRange>* plain_ranges = nullptr;
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
  // True when the text holds the text of a control token (one that
  // parse_special would turn into that token).
  bool has_control_text(std::string_view text) const;

  // The bytes a token stands for. Control tokens give their text only when
  // `render_special` is set.
  std::string token_bytes(TokenId id, bool render_special = false) const;
  std::string decode(const std::vector<TokenId>& ids, bool render_special = false) const;

  const Vocab& vocab() const { return vocab_; }
  // The longest text of any token: a text of B bytes has at least
  // B / max_token_bytes() tokens, known before encoding it.
  size_t max_token_bytes() const { return max_token_bytes_; }
  std::string kind_name() const;

 private:
  struct Fragment {
    std::string_view text;  // raw text when token == kNoToken
    TokenId token = kNoToken;
  };
  std::vector<Fragment> split_special(std::string_view text, const EncodeOptions& options) const;
  void encode_text(std::string_view text, bool after_special, std::vector<TokenId>* out) const;

  Vocab vocab_;
  std::vector<Regex> pre_regexes_;
  std::vector<TokenId> specials_by_length_;  // longest text first
  size_t max_token_bytes_ = 1;
};

}  // namespace tessera
