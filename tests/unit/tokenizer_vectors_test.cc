// Conformance with llama.cpp's tokenizer test vectors: vocab-only GGUF files
// with test strings (.inp) and the ids llama.cpp produced (.out).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "models/gguf/gguf_file.h"
#include "engine/core/error.h"
#include "models/tokenizer/tokenizer.h"
#include "models/tokenizer/tokenizer_json_writer.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

std::vector<std::string> split_on(const std::string& text, const std::string& separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t hit; (hit = text.find(separator, start)) != std::string::npos; start = hit + separator.size()) {
    parts.push_back(text.substr(start, hit - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::vector<TokenId> parse_ids(const std::string& line) {
  std::vector<TokenId> ids;
  std::istringstream in(line);
  for (TokenId id; in >> id;) ids.push_back(id);
  return ids;
}

struct VectorSet {
  std::string vocab;   // ggml-vocab-<vocab>.gguf
  std::string folder;  // where .inp/.out live, under tokenizer-vectors/
};

void PrintTo(const VectorSet& set, std::ostream* os) { *os << set.folder << set.vocab; }

std::string vocab_file(const VectorSet& set) {
  const std::string name = "ggml-vocab-" + set.vocab + ".gguf";
  const std::string newer = test::data_path("tokenizer-vectors/llama-cpp-python-0.3.36/" + name);
  return std::filesystem::exists(newer) ? newer : test::data_path("tokenizer-vectors/" + name);
}

class TokenizerVectors : public ::testing::TestWithParam<VectorSet> {};

// Encodes every test string of `set` and reports each result that differs
// from llama.cpp's.
void expect_llama_cpp_ids(const Tokenizer& tokenizer, const VectorSet& set) {
  const std::string base = test::data_path("tokenizer-vectors/" + set.folder + "ggml-vocab-" + set.vocab + ".gguf");
  // Every test string is followed by the separator, so the last part is empty.
  std::vector<std::string> inputs = split_on(test::read_file(base + ".inp"), "\n__ggml_vocab_test__\n");
  if (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  std::vector<std::string> outputs = split_on(test::read_file(base + ".out"), "\n");
  if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  ASSERT_EQ(inputs.size(), outputs.size());
  ASSERT_GT(inputs.size(), 30u);
  int mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> got = tokenizer.encode(inputs[i], {.add_special = false, .parse_special = true});
    const std::vector<TokenId> want = parse_ids(outputs[i]);
    if (got != want) {
      ++mismatches;
      std::ostringstream g;
      for (TokenId id : got) g << ' ' << id;
      ADD_FAILURE() << set.folder << set.vocab << " case " << i << " '" << inputs[i] << "'\n  want:" << outputs[i] << "\n  got: " << g.str();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(TokenizerVectors, MatchLlamaCpp) {
  const gguf::File file = gguf::File::open(vocab_file(GetParam()));
  expect_llama_cpp_ids(Tokenizer::from_gguf(file), GetParam());
}

// A byte-pair vocabulary written as tokenizer.json (as `tessera quantize`
// does for a GGUF input) and read back encodes every string as llama.cpp.
TEST_P(TokenizerVectors, WrittenAsTokenizerJsonMatchLlamaCpp) {
  const gguf::File file = gguf::File::open(vocab_file(GetParam()));
  const Tokenizer original = Tokenizer::from_gguf(file);
  if (original.vocab().model != TokenizerModel::kBytePair) {
    EXPECT_THROW(tokenizer_json_from_vocab(original.vocab()), Error);
    return;
  }
  const std::string json = tokenizer_json_from_vocab(original.vocab()).dump();
  const std::string config = tokenizer_config_from_vocab(original.vocab(), "").dump();
  const Tokenizer reread = Tokenizer::from_hf_json(json, config, GetParam().vocab + " tokenizer.json");
  EXPECT_EQ(reread.vocab().size(), original.vocab().size());
  EXPECT_EQ(reread.vocab().bos, original.vocab().bos);
  EXPECT_EQ(reread.vocab().eos, original.vocab().eos);
  EXPECT_EQ(reread.vocab().add_bos, original.vocab().add_bos);
  expect_llama_cpp_ids(reread, GetParam());
}

std::vector<VectorSet> all_sets() {
  std::vector<VectorSet> sets;
  for (const char* vocab : {"llama-spm", "phi-3", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder"}) {
    sets.push_back({vocab, ""});
  }
  for (const char* vocab : {"llama-spm", "phi-3", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder",
                            "llama-bpe", "qwen2", "refact", "mpt"}) {
    sets.push_back({vocab, "llama-cpp-python-0.3.36/"});
  }
  return sets;
}

INSTANTIATE_TEST_SUITE_P(LlamaCppVocabs, TokenizerVectors, ::testing::ValuesIn(all_sets()), [](const auto& info) {
  std::string name = info.param.vocab + (info.param.folder.empty() ? "" : "_newer");
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
});

}  // namespace
}  // namespace tessera
