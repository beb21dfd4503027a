// Builds a Tokenizer from the tokenizer.ggml.* metadata of a GGUF file.
#include <algorithm>
#include <string_view>

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/pretokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace tessera {
namespace {

TokenKind kind_from_gguf(int64_t raw) {
  switch (raw) {
    case 2: return TokenKind::kUnknown;
    case 3: return TokenKind::kControl;
    case 4: return TokenKind::kUserDefined;
    case 5: return TokenKind::kUnused;
    case 6: return TokenKind::kByte;
    default: return TokenKind::kNormal;  // 1, and 0 ("undefined")
  }
}

// Turn and sequence terminators that some converters store as ordinary or
// user-defined tokens. They end generation, and like llama.cpp we treat them
// as control tokens so plain text containing them is not cut up.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",  // DeepSeek
    "<end_of_utterance>", "</s>", "<|return|>", "<|call|>"};

class GgufVocabReader {
 public:
  explicit GgufVocabReader(const gguf::File& file) : file_(file) {}

  Vocab read() {
    Vocab v;
    const std::string model = file_.get_string("tokenizer.ggml.model").value_or("");
    if (model == "llama") {
      v.model = TokenizerModel::kSentencePiece;
      v.byte_fallback = true;
      v.add_space_prefix = true;
      v.add_bos = true;
      v.bos = 1;
      v.eos = 2;
      v.unk = 0;
    } else if (model == "gpt2") {
      v.model = TokenizerModel::kBytePair;
      v.byte_level = true;
    } else if (model.empty()) {
      fail("tokenizer.ggml.model", "missing: the file has no tokenizer");
    } else {
      fail("tokenizer.ggml.model", "tokenizer model '" + model + "' is not supported (llama and gpt2 are)");
    }
    read_tokens(&v);
    if (v.model == TokenizerModel::kBytePair) read_bpe_settings(&v);
    read_special_ids(&v);
    v.finalize(file_.name());
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(file_.name() + ": key '" + key + "': " + what);
  }

  const gguf::Array& array_of(const std::string& key, gguf::ValueType type, size_t expected_size) const {
    const gguf::Array* a = file_.get_array(key);
    if (!a) fail(key, "missing");
    if (a->element_type != type) {
      fail(key, "array of " + std::string(gguf::value_type_name(a->element_type)) + ", expected " +
                    std::string(gguf::value_type_name(type)));
    }
    if (expected_size != 0 && a->items.size() != expected_size) {
      fail(key, std::to_string(a->items.size()) + " entries, expected " + std::to_string(expected_size));
    }
    return *a;
  }

  void read_tokens(Vocab* v) const {
    const gguf::Array& tokens = array_of("tokenizer.ggml.tokens", gguf::ValueType::kString, 0);
    if (tokens.items.empty()) fail("tokenizer.ggml.tokens", "empty");
    if (tokens.items.size() > size_t(INT32_MAX)) fail("tokenizer.ggml.tokens", "too many tokens");
    const size_t n = tokens.items.size();
    v->texts.reserve(n);
    for (const gguf::Value& t : tokens.items) v->texts.push_back(*t.as_string());
    if (file_.find("tokenizer.ggml.scores")) {
      for (const gguf::Value& s : array_of("tokenizer.ggml.scores", gguf::ValueType::kFloat32, n).items) {
        v->scores.push_back(float(*s.as_float()));
      }
    }
    v->kinds.assign(n, TokenKind::kNormal);
    if (file_.find("tokenizer.ggml.token_type")) {
      const gguf::Array& types = array_of("tokenizer.ggml.token_type", gguf::ValueType::kInt32, n);
      for (size_t i = 0; i < n; ++i) v->kinds[i] = kind_from_gguf(*types.items[i].as_int());
    }
  }

  void read_bpe_settings(Vocab* v) const {
    const gguf::Array& merges = array_of("tokenizer.ggml.merges", gguf::ValueType::kString, 0);
    v->merge_ranks.reserve(merges.items.size());
    for (size_t i = 0; i < merges.items.size(); ++i) {
      const std::string& m = *merges.items[i].as_string();
      if (m.find(' ', 1) == std::string::npos) {
        fail("tokenizer.ggml.merges", "entry " + std::to_string(i) + " '" + m + "' is not two tokens separated by a space");
      }
      v->merge_ranks.emplace(m, int32_t(i));
    }
    v->pre_name = file_.get_string("tokenizer.ggml.pre").value_or("default");
    try {
      v->pre_patterns = pretokenizer_patterns(v->pre_name);
    } catch (const Error& e) {
      fail("tokenizer.ggml.pre", e.what());
    }
    v->ignore_merges = pretokenizer_ignores_merges(v->pre_name);
  }

  TokenId token_id(const std::string& key, TokenId fallback) const {
    const auto id = file_.get_uint(key);
    if (!id) return fallback;
    if (*id > uint64_t(INT32_MAX)) fail(key, "token id " + std::to_string(*id) + " out of range");
    return TokenId(*id);
  }

  void read_special_ids(Vocab* v) const {
    v->bos = token_id("tokenizer.ggml.bos_token_id", v->bos);
    v->eos = token_id("tokenizer.ggml.eos_token_id", v->eos);
    v->unk = token_id("tokenizer.ggml.unknown_token_id", v->unk);
    v->pad = token_id("tokenizer.ggml.padding_token_id", v->pad);
    v->add_bos = file_.get_bool("tokenizer.ggml.add_bos_token").value_or(v->add_bos);
    v->add_eos = file_.get_bool("tokenizer.ggml.add_eos_token").value_or(v->add_eos);
    v->add_space_prefix = file_.get_bool("tokenizer.ggml.add_space_prefix").value_or(v->add_space_prefix);
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
      const TokenId id = token_id(key, kNoToken);
      if (id != kNoToken && size_t(id) < v->size()) add_end_of_generation(v, id);
    }
    if (v->eos != kNoToken && size_t(v->eos) < v->size()) add_end_of_generation(v, v->eos);
    mark_end_of_generation_texts(v);
  }

  static void add_end_of_generation(Vocab* v, TokenId id) {
    auto& ids = v->end_of_generation;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }

  static void mark_end_of_generation_texts(Vocab* v) {
    for (size_t id = 0; id < v->size(); ++id) {
      const std::string& text = v->texts[id];
      if (text.size() < 3 || (text[0] != '<' && text[0] != '_')) continue;
      for (std::string_view marker : kEndOfGenerationTexts) {
        if (text != marker) continue;
        v->kinds[id] = TokenKind::kControl;
        add_end_of_generation(v, TokenId(id));
      }
    }
  }

  const gguf::File& file_;
};

}  // namespace

Tokenizer Tokenizer::from_gguf(const gguf::File& file) { return Tokenizer(GgufVocabReader(file).read()); }

}  // namespace tessera
