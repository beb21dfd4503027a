#include "models/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/token_ids.h"
#include "models/tokenizer/encoders.h"
#include "models/tokenizer/pretokenizer.h"
#include "models/tokenizer/unicode_nfc.h"

namespace tessera {
namespace {

constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";  // U+2581, SentencePiece's space

std::string escape_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') out.append(kSpaceMarker);
    else out.push_back(c);
  }
  return out;
}

std::string unescape_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
      out.push_back(' ');
      i += kSpaceMarker.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// <0xAB> -> 0xAB, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value *= 16;
    if (c >= '0' && c <= '9') value += c - '0';
    else if (c >= 'A' && c <= 'F') value += c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value += c - 'a' + 10;
    else return -1;
  }
  return value;
}

std::string apply_rewrites(const std::vector<TextRewrite>& rewrites, std::string_view text) {
  std::string out(text);
  for (const TextRewrite& r : rewrites) {
    if (r.kind == TextRewrite::kPrepend) {
      if (!out.empty()) out.insert(0, r.to);
      continue;
    }
    if (r.kind == TextRewrite::kNfc) {
      out = unicode::to_nfc(out);
      continue;
    }
    if (r.from.empty()) continue;
    std::string replaced;
    replaced.reserve(out.size());
    size_t start = 0;
    for (size_t hit; (hit = out.find(r.from, start)) != std::string::npos; start = hit + r.from.size()) {
      replaced.append(out, start, hit - start).append(r.to);
    }
    replaced.append(out, start, std::string::npos);
    out = std::move(replaced);
  }
  return out;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  for (const std::string& pattern : vocab_.pre_patterns) pre_regexes_.emplace_back(pattern);
  for (size_t id = 0; id < vocab_.size(); ++id) {
    if (vocab_.is_special(TokenId(id)) && !vocab_.texts[id].empty()) specials_by_length_.push_back(TokenId(id));
    max_token_bytes_ = std::max(max_token_bytes_, vocab_.texts[id].size());
  }
  std::stable_sort(specials_by_length_.begin(), specials_by_length_.end(), [this](TokenId a, TokenId b) {
    return vocab_.texts[size_t(a)].size() > vocab_.texts[size_t(b)].size();
  });
}

std::string Tokenizer::kind_name() const {
  if (vocab_.model == TokenizerModel::kSentencePiece) return "sentencepiece";
  return vocab_.byte_level ? "bpe (byte-level)" : "bpe";
}

// Special tokens are matched longest first; each splits the raw fragments
// around its occurrences. User-defined tokens always match; control and
// unknown tokens only when `parse_special` is set.
namespace {

// True when [begin, end) overlaps one of the sorted, disjoint `ranges`.
bool overlaps(const std::vector<ByteRange>& ranges, size_t begin, size_t end) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin, [](size_t b, const ByteRange& r) { return b < r.end; });
  return it != ranges.end() && it->begin < end;
}

}  // namespace

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text, const EncodeOptions& options) const {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({text, kNoToken});
  for (TokenId id : specials_by_length_) {
    const TokenKind kind = vocab_.kinds[size_t(id)];
    if (!options.parse_special && kind != TokenKind::kUserDefined) continue;
    const bool guarded = options.plain_ranges && !options.plain_ranges->empty() && kind != TokenKind::kUserDefined;
    const std::string& needle = vocab_.texts[size_t(id)];
    std::vector<Fragment> next;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t from = 0, hit; (hit = rest.find(needle, from)) != std::string_view::npos;) {
        const size_t at = size_t(rest.data() - text.data()) + hit;
        if (guarded && overlaps(*options.plain_ranges, at, at + needle.size())) {
          from = hit + 1;
          continue;
        }
        if (hit > 0) next.push_back({rest.substr(0, hit), kNoToken});
        next.push_back({{}, id});
        rest = rest.substr(hit + needle.size());
        from = 0;
      }
      if (!rest.empty()) next.push_back({rest, kNoToken});
    }
    fragments = std::move(next);
  }
  return fragments;
}

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<TokenId>* out) const {
  if (vocab_.model == TokenizerModel::kSentencePiece) {
    std::string prefixed;
    if (vocab_.add_space_prefix && after_special) prefixed = " ";
    prefixed.append(text);
    encode_sentencepiece(vocab_, escape_whitespace(prefixed), out);
    return;
  }
  encode_bpe(vocab_, pre_regexes_, apply_rewrites(vocab_.normalizers, text), out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  std::vector<TokenId> out;
  if (options.add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  bool after_special = true;
  for (const Fragment& f : split_special(text, options)) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text(f.text, after_special, &out);
      after_special = false;
    }
  }
  if (options.add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  return out;
}

bool Tokenizer::has_control_text(std::string_view text) const {
  for (const Fragment& f : split_special(text, {.parse_special = true})) {
    if (f.token != kNoToken && vocab_.kinds[size_t(f.token)] != TokenKind::kUserDefined) return true;
  }
  return false;
}

std::string Tokenizer::token_bytes(TokenId id, bool render_special) const {
  if (!token_in_vocabulary(id, int64_t(vocab_.size()))) throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
  const std::string& text = vocab_.texts[size_t(id)];
  switch (vocab_.kinds[size_t(id)]) {
    case TokenKind::kControl:
    case TokenKind::kUnknown:
    case TokenKind::kUnused:
      return render_special ? text : std::string();
    case TokenKind::kUserDefined:
      return text;
    case TokenKind::kByte: {
      const int byte = parse_byte_token(text);
      if (byte >= 0) return std::string(1, char(byte));
      break;
    }
    case TokenKind::kNormal:
      break;
  }
  if (vocab_.model == TokenizerModel::kBytePair && vocab_.byte_level) return byte_level_to_bytes(text);
  if (vocab_.byte_fallback) {
    const int byte = parse_byte_token(text);
    if (byte >= 0) return std::string(1, char(byte));
  }
  return unescape_whitespace(text);
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string out;
  // The space the encoder put in front of the text comes off the first piece.
  bool strip_pending = vocab_.add_space_prefix;
  for (TokenId id : ids) {
    std::string piece = token_bytes(id, render_special);
    if (strip_pending && !piece.empty()) {
      if (piece[0] == ' ') piece.erase(0, 1);
      strip_pending = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace tessera
