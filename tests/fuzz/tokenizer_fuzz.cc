// libFuzzer target: any bytes (invalid UTF-8 included) encode without a crash
// on both a SentencePiece and a byte-level BPE vocabulary, every id is in the
// vocabulary, and BPE decoding gives the input back byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"
#include "engine/core/unicode.h"

namespace {

struct Vocabs {
  std::unique_ptr<tessera::Tokenizer> spm;
  std::unique_ptr<tessera::Tokenizer> bpe;
};

std::unique_ptr<tessera::Tokenizer> load(const std::string& name) {
  const std::string path = std::string(TESSERA_TEST_DATA_DIR) + "/tokenizer-vectors/ggml-vocab-" + name + ".gguf";
  return std::make_unique<tessera::Tokenizer>(tessera::Tokenizer::from_gguf(tessera::gguf::File::open(path)));
}

const Vocabs& vocabs() {
  static const Vocabs v{load("llama-spm"), load("gpt-2")};  // loaded once, read-only after
  return v;
}

void check_ids(const tessera::Tokenizer& t, const std::vector<tessera::TokenId>& ids) {
  for (tessera::TokenId id : ids) {
    if (id < 0 || size_t(id) >= t.vocab().size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Vocabs& v = vocabs();
  const auto spm_ids = v.spm->encode(text, {.add_special = true, .parse_special = true});
  check_ids(*v.spm, spm_ids);
  (void)v.spm->decode(spm_ids);
  const auto bpe_ids = v.bpe->encode(text, {.add_special = false, .parse_special = false});
  check_ids(*v.bpe, bpe_ids);
  // Byte-level BPE is lossless for valid UTF-8 text.
  const std::string back = v.bpe->decode(bpe_ids);
  if (tessera::unicode::is_valid_utf8(text) && back != text) std::abort();
  return 0;
}
