#pragma once
// Unicode canonical composition (NFC), the normalizer of Qwen2's and other
// Hugging Face tokenizers. Linear in the input, up to sorting each run of
// combining marks by class.
#include <string>
#include <string_view>

namespace tessera::unicode {

// `text` in NFC. Text whose code points are all below U+0300 is returned as
// is (nothing there decomposes differently or combines).
std::string to_nfc(std::string_view text);

}  // namespace tessera::unicode
