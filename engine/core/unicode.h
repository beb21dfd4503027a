#pragma once
// UTF-8 decoding and the Unicode properties the tokenizers use.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::unicode {

enum class Category : uint8_t { kLetter, kMark, kNumber, kPunctuation, kSymbol, kSeparator, kOther };

Category category(char32_t cp);
bool is_whitespace(char32_t cp);  // the Unicode White_Space property
char32_t to_lower(char32_t cp);   // simple (one-to-one) lowercase mapping

// Length of the UTF-8 sequence that `lead` announces, from its high bits
// alone (1 for a continuation byte, 4 for 0xF0 and above).
int utf8_sequence_length(uint8_t lead);

// Decodes one code point at `pos`. Decoding is structural, as llama.cpp's
// tokenizer does it: overlong forms and surrogates decode to their value;
// a bad lead or continuation byte, a truncated sequence or a value past
// U+10FFFF yields U+FFFD and advances by one byte.
char32_t decode_utf8(std::string_view text, size_t* pos);
std::u32string decode_utf8(std::string_view text);
// Strict check: no overlong forms, surrogates, stray or missing bytes.
bool is_valid_utf8(std::string_view text);
void append_utf8(char32_t cp, std::string* out);
std::string encode_utf8(std::u32string_view text);

// `text` with every byte that is not part of a valid sequence replaced by
// U+FFFD, so the result is always valid UTF-8.
std::string to_valid_utf8(std::string_view text);

// Number of bytes at the end of `text` that start an incomplete UTF-8 sequence.
size_t incomplete_utf8_suffix(std::string_view text);

}  // namespace tessera::unicode
