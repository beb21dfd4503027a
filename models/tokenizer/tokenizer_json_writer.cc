#include "models/tokenizer/tokenizer_json_writer.h"

#include "engine/core/error.h"

namespace tessera {
namespace {

using nlohmann::json;

json added_tokens(const Vocab& v) {
  json out = json::array();
  for (size_t id = 0; id < v.size(); ++id) {
    if (!v.is_special(TokenId(id))) continue;
    out.push_back({{"id", id},
                   {"content", v.texts[id]},
                   {"single_word", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"normalized", false},
                   {"special", v.kinds[id] != TokenKind::kUserDefined}});
  }
  return out;
}

json normalizer(const Vocab& v) {
  if (v.normalizers.empty()) return nullptr;
  json steps = json::array();
  for (const TextRewrite& r : v.normalizers) {
    switch (r.kind) {
      case TextRewrite::kReplace: steps.push_back({{"type", "Replace"}, {"pattern", {{"String", r.from}}}, {"content", r.to}}); break;
      case TextRewrite::kPrepend: steps.push_back({{"type", "Prepend"}, {"prepend", r.to}}); break;
      case TextRewrite::kNfc: steps.push_back({{"type", "NFC"}}); break;
    }
  }
  return {{"type", "Sequence"}, {"normalizers", steps}};
}

json pre_tokenizer(const Vocab& v) {
  json steps = json::array();
  for (const std::string& pattern : v.pre_patterns) {
    steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}});
  }
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}});
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}

// BOS and EOS around each sequence, as the vocabulary asks.
json post_processor(const Vocab& v) {
  if (!(v.add_bos && v.bos != kNoToken) && !(v.add_eos && v.eos != kNoToken)) return nullptr;
  json specials = json::object();
  const auto special = [&](TokenId id) {
    const std::string& text = v.texts[size_t(id)];
    specials[text] = {{"id", text}, {"ids", json::array({id})}, {"tokens", json::array({text})}};
    return json{{"SpecialToken", {{"id", text}, {"type_id", 0}}}};
  };
  const auto around = [&](const char* sequence, json* out) {
    if (v.add_bos && v.bos != kNoToken) out->push_back(special(v.bos));
    out->push_back({{"Sequence", {{"id", sequence}, {"type_id", 0}}}});
    if (v.add_eos && v.eos != kNoToken) out->push_back(special(v.eos));
  };
  json single = json::array(), pair = json::array();
  around("A", &single);
  around("A", &pair);
  around("B", &pair);
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

// Merges in rank order, as "left right".
json ranked_merges(const Vocab& v) {
  std::vector<const std::string*> by_rank(v.merge_ranks.size(), nullptr);
  for (const auto& [pair, rank] : v.merge_ranks) {
    if (rank < 0 || size_t(rank) >= by_rank.size() || by_rank[size_t(rank)]) throw Error("tokenizer: merge ranks are not 0..n-1");
    by_rank[size_t(rank)] = &pair;
  }
  json out = json::array();
  for (const std::string* pair : by_rank) out.push_back(*pair);
  return out;
}

json bpe_model(const Vocab& v) {
  json vocab = json::object();
  for (size_t id = 0; id < v.size(); ++id) {
    if (v.find(v.texts[id]) != TokenId(id)) {  // the index keeps the first id of a repeated text
      throw Error("tokenizer: token " + std::to_string(id) + " repeats the text '" + v.texts[id] + "' of an earlier token");
    }
    vocab[v.texts[id]] = id;
  }
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", v.unk == kNoToken ? json(nullptr) : json(v.texts[size_t(v.unk)])},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", v.byte_fallback},
          {"ignore_merges", v.ignore_merges},
          {"vocab", std::move(vocab)},
          {"merges", ranked_merges(v)}};
}

}  // namespace

json tokenizer_json_from_vocab(const Vocab& v) {
  if (v.model != TokenizerModel::kBytePair) {
    throw Error("tokenizer: a SentencePiece vocabulary cannot be written as tokenizer.json (only byte-pair ones)");
  }
  if (!v.byte_level) throw Error("tokenizer: only byte-level BPE vocabularies can be written as tokenizer.json");
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens(v)},
          {"normalizer", normalizer(v)},
          {"pre_tokenizer", pre_tokenizer(v)},
          {"post_processor", post_processor(v)},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model", bpe_model(v)}};
}

json tokenizer_config_from_vocab(const Vocab& v, const std::string& chat_template) {
  const auto text = [&](TokenId id) { return id == kNoToken ? json(nullptr) : json(v.texts[size_t(id)]); };
  json config = {{"bos_token", text(v.bos)},         {"eos_token", text(v.eos)},
                 {"unk_token", text(v.unk)},         {"pad_token", text(v.pad)},
                 {"add_bos_token", v.add_bos},       {"add_eos_token", v.add_eos},
                 {"clean_up_tokenization_spaces", false}, {"model_max_length", 1 << 30}};
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  return config;
}

}  // namespace tessera
