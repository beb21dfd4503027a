#pragma once
// The two merge algorithms. Each encodes one run of ordinary text (special
// tokens are split off before) and appends token ids to `out`.
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/regex.h"
#include "models/tokenizer/vocab.h"

namespace tessera {

// SentencePiece: `text` is already whitespace-escaped (spaces as U+2581).
void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

// BPE over the pre-tokens of `text`.
void encode_bpe(const Vocab& vocab, const std::vector<Regex>& pre_regexes, std::string_view text,
                std::vector<TokenId>* out);

// The token for one raw byte: <0xXX>, else the byte-level character, else unk.
TokenId byte_token(const Vocab& vocab, uint8_t byte);

}  // namespace tessera
