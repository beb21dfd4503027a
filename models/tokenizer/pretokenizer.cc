#include "models/tokenizer/pretokenizer.h"

#include <array>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/core/unicode.h"

namespace tessera {

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

// Llama 3 and Qwen2 differ only in how many digits group together.
std::string llama3_style_pattern(const char* digits) {
  return std::string("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|") +
         digits + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
}

const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

const char* const kCjkRun = "[一-龥ࠀ-一가-퟿]+";

// GPT-2's pattern without the final \s+ alternative; unmatched whitespace
// still becomes its own piece.
const char* const kGpt2CorePattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

}  // namespace

std::vector<std::string> pretokenizer_patterns(const std::string& pre) {
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "dbrx" ||
      pre == "smaug-bpe" || pre == "pixtral") {
    return {llama3_style_pattern("\\p{N}{1,3}")};
  }
  if (pre == "qwen2" || pre == "stablelm2" || pre == "deepseek-r1-qwen" || pre == "hunyuan") {
    return {llama3_style_pattern("\\p{N}")};
  }
  if (pre == "gpt2" || pre == "gpt-2" || pre == "mpt" || pre == "olmo" || pre == "jais") return {kGpt2CorePattern};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell" ||
      pre == "exaone" || pre == "minerva-7b") {
    return {"\\p{N}", kGpt2CorePattern};
  }
  if (pre == "falcon") return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2CorePattern, "[0-9][0-9][0-9]"};
  if (pre == "deepseek-llm") {
    return {"[\\r\\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", kCjkRun, "\\p{N}+"};
  }
  if (pre == "deepseek-coder") return {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjkRun, "\\p{N}"};
  if (pre.empty() || pre == "default") {
    return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2CorePattern, "\\p{N}+", "[0-9][0-9][0-9]"};
  }
  throw Error("unknown pre-tokenizer '" + pre + "'");
}

bool pretokenizer_ignores_merges(const std::string& pre) {
  return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "pixtral";
}

std::vector<std::u32string> pretokenize(const std::vector<Regex>& regexes, std::u32string_view text) {
  std::vector<std::u32string> pieces;
  if (text.empty()) return pieces;
  pieces.emplace_back(text);
  for (const Regex& regex : regexes) {
    std::vector<std::u32string> next;
    for (const std::u32string& piece : pieces) {
      for (std::u32string& part : split_isolated(regex, piece)) next.push_back(std::move(part));
    }
    pieces = std::move(next);
  }
  return pieces;
}

namespace {

// Printable bytes map to themselves; the rest to U+0100 onwards, in order.
struct ByteLevelAlphabet {
  std::array<char32_t, 256> byte_to_cp{};
  std::unordered_map<char32_t, uint8_t> cp_to_byte;

  ByteLevelAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      byte_to_cp[size_t(b)] = printable ? char32_t(b) : next++;
      cp_to_byte[byte_to_cp[size_t(b)]] = uint8_t(b);
    }
  }
};

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet table;  // immutable after construction
  return table;
}

}  // namespace

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) unicode::append_utf8(alphabet().byte_to_cp[b], &out);
  return out;
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t cp = unicode::decode_utf8(text, &pos);
    auto it = alphabet().cp_to_byte.find(cp);
    if (it != alphabet().cp_to_byte.end()) {
      out.push_back(char(it->second));
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

}  // namespace tessera
