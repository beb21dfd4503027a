#pragma once
// Pre-tokenization for BPE: the regex presets named by GGUF's
// tokenizer.ggml.pre, the sequential split, and GPT-2's byte-level alphabet.
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/regex.h"

namespace tessera {

// GPT-2's split pattern, also used by Hugging Face's ByteLevel pre-tokenizer.
extern const char* const kGpt2Pattern;

// The regexes for a GGUF pre-tokenizer name; throws tessera::Error naming an
// unknown one.
std::vector<std::string> pretokenizer_patterns(const std::string& pre_name);
// Whether BPE should use whole pre-tokens found in the vocabulary as is.
bool pretokenizer_ignores_merges(const std::string& pre_name);

// Splits `text` with each regex in turn (each applied to every piece the
// previous ones produced), keeping unmatched text as pieces of its own.
std::vector<std::u32string> pretokenize(const std::vector<Regex>& regexes, std::u32string_view text);

// GPT-2's reversible mapping of bytes to printable code points.
std::string bytes_to_byte_level(std::string_view bytes);
// The inverse; code points outside the alphabet are copied as UTF-8.
std::string byte_level_to_bytes(std::string_view text);

}  // namespace tessera
