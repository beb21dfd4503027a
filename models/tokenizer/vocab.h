#pragma once
// A tokenizer's vocabulary and settings, as loaded from GGUF metadata or a
// Hugging Face tokenizer.json. Plain data; the encoders read it.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera {

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

enum class TokenKind : uint8_t { kNormal, kUnknown, kControl, kUserDefined, kUnused, kByte };

enum class TokenizerModel : uint8_t {
  kSentencePiece,  // score-driven merges over characters, byte fallback tokens
  kBytePair,       // rank-driven merges (GPT-2 style), usually over byte-level text
};

// A text rewrite applied before BPE (Hugging Face normalizers).
struct TextRewrite {
  enum Kind : uint8_t { kReplace, kPrepend, kNfc } kind = kReplace;
  std::string from;  // kReplace: the literal to replace
  std::string to;    // the replacement, or the prefix to prepend
};

struct Vocab {
  TokenizerModel model = TokenizerModel::kSentencePiece;
  std::vector<std::string> texts;  // id -> token text as stored
  std::vector<float> scores;       // id -> SentencePiece score (empty for BPE)
  std::vector<TokenKind> kinds;    // id -> kind
  std::unordered_map<std::string, TokenId> ids;
  // BPE: "left right" -> merge rank (lower merges first).
  std::unordered_map<std::string, int32_t> merge_ranks;

  // BPE: rewrites applied to each run of ordinary text, in order.
  std::vector<TextRewrite> normalizers;
  // Regexes applied one after another to split text before BPE.
  std::vector<std::string> pre_patterns;
  std::string pre_name;  // GGUF tokenizer.ggml.pre or a description

  bool byte_level = true;        // BPE: GPT-2 byte-to-unicode alphabet
  bool byte_fallback = false;    // unknown pieces become <0xXX> tokens
  bool ignore_merges = false;    // BPE: a whole pre-token found in the vocab is used as is
  // The text gets a leading space (SentencePiece, or a Hugging Face Prepend
  // normalizer) that decoding takes away again.
  bool add_space_prefix = false;
  bool add_bos = false;
  bool add_eos = false;

  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId unk = kNoToken;
  TokenId pad = kNoToken;
  std::vector<TokenId> end_of_generation;  // eos, eot, eom … as the model declares

  size_t size() const { return texts.size(); }
  TokenId find(const std::string& text) const {
    auto it = ids.find(text);
    return it == ids.end() ? kNoToken : it->second;
  }
  bool is_special(TokenId id) const {
    const TokenKind k = kinds[size_t(id)];
    return k == TokenKind::kControl || k == TokenKind::kUserDefined || k == TokenKind::kUnknown;
  }
  // Builds `ids` from `texts`.
  void index_texts();
  // Indexes the texts if not yet done and checks the special ids; throws
  // tessera::Error naming `source`.
  void finalize(const std::string& source);
};

}  // namespace tessera
