// Every file in tests/data/malformed breaks one rule and must be rejected
// with an error that names the file and says what is wrong (the fragment in
// expected.tsv). Run under ASan/UBSan by `make sanitize-tests`.
#include <gtest/gtest.h>

#include <sstream>

#include "engine/core/error.h"
#include "models/gguf/gguf_file.h"
#include "models/safetensors/safetensors_file.h"
#include "models/tokenizer/tokenizer.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

struct Case {
  std::string file;
  std::string fragment;  // "-" for a valid baseline
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::istringstream in(test::read_file(test::data_path("malformed/expected.tsv")));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Opens the file the way a model load does: the container, then the
// tokenizer when the file carries tokenizer metadata or is a vocab case.
void load(const std::string& path, const std::string& name) {
  if (ends_with(path, ".safetensors")) {
    safetensors::File::open(path);
    return;
  }
  const gguf::File file = gguf::File::open(path);
  if (name.rfind("vocab_", 0) == 0) Tokenizer::from_gguf(file);
}

class MalformedFile : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedFile, RejectedWithClearError) {
  const Case& c = GetParam();
  const std::string path = test::data_path("malformed/" + c.file);
  if (c.fragment == "-") {
    EXPECT_NO_THROW(load(path, c.file));
    return;
  }
  try {
    load(path, c.file);
    FAIL() << c.file << " was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(c.fragment), std::string::npos) << c.file << ": message was: " << message;
    EXPECT_NE(message.find(c.file), std::string::npos) << "message does not name the file: " << message;
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.file;
  for (char& ch : name) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedFile, ::testing::ValuesIn(load_cases()), case_name);

TEST(MalformedCorpus, HasAtLeastSixtyBrokenFiles) {
  size_t broken = 0;
  for (const Case& c : load_cases()) broken += c.fragment != "-";
  EXPECT_GE(broken, 60u);
}

}  // namespace
}  // namespace tessera
