// Builds a Tokenizer from a Hugging Face tokenizer.json (BPE models) and,
// when given, tokenizer_config.json. Components the encoder does not
// implement are refused by name rather than approximated.
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "models/hf/hf_model_dir.h"
#include "models/tokenizer/pretokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;

constexpr const char* kMetaspace = "\xe2\x96\x81";

// Escapes regex metacharacters so a literal Split pattern matches itself.
std::string escape_regex(const std::string& literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

class HfVocabReader {
 public:
  HfVocabReader(const json& tokenizer, const json* config, std::string source)
      : tokenizer_(tokenizer), config_(config), source_(std::move(source)) {}

  Vocab read() {
    if (!tokenizer_.is_object()) fail("top level is not an object");
    const json& model = member(tokenizer_, "model", "model");
    const std::string type = model.value("type", "");
    if (type != "BPE") fail("model type '" + type + "' is not supported (BPE is)");
    Vocab v;
    v.model = TokenizerModel::kBytePair;
    v.byte_level = false;
    v.byte_fallback = model.value("byte_fallback", false);
    v.ignore_merges = model.value("ignore_merges", false);
    id_limit_ = defined_tokens(model) + kIdGapAllowed;
    read_vocab(model, &v);
    read_merges(model, &v);
    read_added_tokens(&v);
    if (tokenizer_.contains("normalizer")) read_normalizer(tokenizer_["normalizer"], &v);
    if (tokenizer_.contains("pre_tokenizer")) read_pre_tokenizer(tokenizer_["pre_tokenizer"], &v);
    v.pre_name = "tokenizer.json";
    v.index_texts();
    if (const json* unk = find_string(model, "unk_token")) v.unk = v.find(unk->get<std::string>());
    read_special_settings(&v);
    v.finalize(source_);
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(source_ + ": " + what); }

  int64_t id_limit_ = 0;

  const json& member(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object() || !obj.contains(key)) fail("missing '" + path + "'");
    return obj[key];
  }

  static const json* find_string(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return (it != obj.end() && it->is_string()) ? &*it : nullptr;
  }

  // Ids index dense tables: one far beyond the tokens the file defines would
  // size them by the id, not by the file.
  static constexpr int64_t kIdGapAllowed = 65536;

  int64_t defined_tokens(const json& model) const {
    const auto vocab = model.find("vocab");
    const auto added = tokenizer_.find("added_tokens");
    return int64_t(vocab != model.end() ? vocab->size() : 0) + int64_t(added != tokenizer_.end() ? added->size() : 0);
  }

  void place(Vocab* v, int64_t id, const std::string& text, TokenKind kind) const {
    if (id < 0 || id > int64_t(INT32_MAX)) fail("token id " + std::to_string(id) + " out of range for '" + text + "'");
    if (id >= id_limit_) {
      fail("token id " + std::to_string(id) + " for '" + text + "' is far beyond the " +
           std::to_string(id_limit_ - kIdGapAllowed) + " tokens the file defines");
    }
    if (size_t(id) >= v->texts.size()) {
      v->texts.resize(size_t(id) + 1);
      v->kinds.resize(size_t(id) + 1, TokenKind::kUnused);
    }
    v->texts[size_t(id)] = text;
    v->kinds[size_t(id)] = kind;
  }

  void read_vocab(const json& model, Vocab* v) const {
    const json& vocab = member(model, "vocab", "model.vocab");
    if (!vocab.is_object()) fail("'model.vocab' is not an object");
    for (const auto& [text, id] : vocab.items()) {
      if (!id.is_number_integer()) fail("model.vocab entry '" + text + "' has no integer id");
      const bool is_byte = v->byte_fallback && text.size() == 6 && text.rfind("<0x", 0) == 0 && text[5] == '>';
      place(v, id.get<int64_t>(), text, is_byte ? TokenKind::kByte : TokenKind::kNormal);
    }
  }

  void read_merges(const json& model, Vocab* v) const {
    if (!model.contains("merges")) return;
    const json& merges = model["merges"];
    if (!merges.is_array()) fail("'model.merges' is not an array");
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& m = merges[i];
      std::string key;
      if (m.is_string()) {
        key = m.get<std::string>();
        if (key.find(' ', 1) == std::string::npos) fail("merge " + std::to_string(i) + " '" + key + "' is not two tokens");
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        key = m[0].get<std::string>() + " " + m[1].get<std::string>();
      } else {
        fail("merge " + std::to_string(i) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      v->merge_ranks.emplace(std::move(key), int32_t(i));
    }
  }

  void read_added_tokens(Vocab* v) const {
    if (!tokenizer_.contains("added_tokens")) return;
    const json& added = tokenizer_["added_tokens"];
    if (!added.is_array()) fail("'added_tokens' is not an array");
    for (const json& t : added) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !find_string(t, "content")) {
        fail("an added_tokens entry lacks an integer 'id' or a string 'content'");
      }
      const bool special = t.value("special", false);
      place(v, t["id"].get<int64_t>(), t["content"].get<std::string>(), special ? TokenKind::kControl : TokenKind::kUserDefined);
    }
  }

  void read_normalizer(const json& n, Vocab* v) const {
    if (n.is_null()) return;
    const std::string type = n.value("type", "");
    if (type == "Sequence") {
      for (const json& inner : member(n, "normalizers", "normalizer.normalizers")) read_normalizer(inner, v);
    } else if (type == "Replace") {
      const json& pattern = member(n, "pattern", "normalizer.pattern");
      const json* literal = find_string(pattern, "String");
      if (!literal) fail("Replace normalizer with a regex pattern is not supported");
      v->normalizers.push_back({TextRewrite::kReplace, literal->get<std::string>(), n.value("content", "")});
    } else if (type == "NFC") {
      v->normalizers.push_back({TextRewrite::kNfc, "", ""});
    } else if (type == "Prepend") {
      v->normalizers.push_back({TextRewrite::kPrepend, "", n.value("prepend", "")});
      v->add_space_prefix = true;
    } else {
      fail("normalizer '" + type + "' is not supported");
    }
  }

  void add_pattern(Vocab* v, std::string pattern) const {
    try {
      Regex check(pattern);
    } catch (const Error& e) {
      fail(std::string("pre_tokenizer: ") + e.what());
    }
    v->pre_patterns.push_back(std::move(pattern));
  }

  void read_pre_tokenizer(const json& p, Vocab* v) const {
    if (p.is_null()) return;
    const std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (const json& inner : member(p, "pretokenizers", "pre_tokenizer.pretokenizers")) read_pre_tokenizer(inner, v);
    } else if (type == "ByteLevel") {
      v->byte_level = true;
      if (p.value("add_prefix_space", false)) fail("ByteLevel with add_prefix_space is not supported");
      if (p.value("use_regex", true)) add_pattern(v, kGpt2Pattern);
    } else if (type == "Split") {
      if (p.value("behavior", "") != "Isolated" || p.value("invert", false)) {
        fail("Split pre-tokenizer: only behavior Isolated without invert is supported");
      }
      const json& pattern = member(p, "pattern", "pre_tokenizer.pattern");
      if (const json* regex = find_string(pattern, "Regex")) add_pattern(v, regex->get<std::string>());
      else if (const json* literal = find_string(pattern, "String")) add_pattern(v, escape_regex(literal->get<std::string>()));
      else fail("Split pre-tokenizer pattern is neither Regex nor String");
    } else if (type == "Digits") {
      add_pattern(v, p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    } else if (type == "Metaspace") {
      const std::string replacement = p.value("replacement", std::string(kMetaspace));
      v->normalizers.push_back({TextRewrite::kReplace, " ", replacement});
      if (p.value("prepend_scheme", "always") != "never") {
        v->normalizers.push_back({TextRewrite::kPrepend, "", replacement});
        v->add_space_prefix = true;
      }
      if (p.value("split", true)) add_pattern(v, escape_regex(replacement) + "[^" + escape_regex(replacement) + "]*");
    } else {
      fail("pre_tokenizer '" + type + "' is not supported");
    }
  }

  // A special token given as "text" or {"content": "text"}.
  TokenId config_token(const Vocab& v, const char* key) const {
    if (!config_ || !config_->contains(key)) return kNoToken;
    const json& t = (*config_)[key];
    const json* text = t.is_string() ? &t : find_string(t, "content");
    if (!text) return kNoToken;
    const TokenId id = v.find(text->get<std::string>());
    if (id == kNoToken) fail(std::string("tokenizer_config.json ") + key + " '" + text->get<std::string>() + "' is not in the vocabulary");
    return id;
  }

  void read_special_settings(Vocab* v) const {
    v->bos = config_token(*v, "bos_token");
    v->eos = config_token(*v, "eos_token");
    v->pad = config_token(*v, "pad_token");
    if (const TokenId unk = config_token(*v, "unk_token"); unk != kNoToken) v->unk = unk;
    if (config_) {
      if (auto it = config_->find("add_bos_token"); it != config_->end() && it->is_boolean()) v->add_bos = it->get<bool>();
      if (auto it = config_->find("add_eos_token"); it != config_->end() && it->is_boolean()) v->add_eos = it->get<bool>();
    }
    if (v->eos != kNoToken) v->end_of_generation.push_back(v->eos);
  }

  const json& tokenizer_;
  const json* config_;
  std::string source_;
};

}  // namespace

Tokenizer Tokenizer::from_hf_json(std::string_view tokenizer_json, std::string_view config_json, const std::string& source) {
  const json tokenizer = hf::parse_json_text(tokenizer_json, source);
  std::optional<json> config;
  if (!config_json.empty()) config = hf::parse_json_text(config_json, source + " (tokenizer_config.json)");
  try {
    return Tokenizer(HfVocabReader(tokenizer, config ? &*config : nullptr, source).read());
  } catch (const json::exception& e) {
    // A field of the wrong JSON type.
    throw Error(source + ": " + e.what());
  }
}

}  // namespace tessera
