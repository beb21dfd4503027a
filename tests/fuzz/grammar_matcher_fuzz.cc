// libFuzzer target: a grammar (from the input's first line) driven by a
// token sequence (the rest). Every state's mask must agree with checking
// each token on its own, and following allowed tokens must never fail.
// Token tables are shared between inputs through one store.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/gbnf_parser.h"

namespace {

std::shared_ptr<const tessera::grammar::TokenVocabulary> vocabulary() {
  std::vector<std::string> texts = {"", "{", "}", "\"", "\":", "\",", "[", "]", ",", " ", "\n", "ab", "a", "b", "1", "12", "-",
                                    ".", "true", "null", "\\", "\\\"", "é", "\xC3", "\xA9", "x\"", "\"}", "{\""};
  for (int c = 32; c < 127; c += 3) texts.push_back(std::string(1, char(c)));
  return std::make_shared<const tessera::grammar::TokenVocabulary>(texts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto vocab = vocabulary();
  // Shared across inputs, as across requests: a table one grammar built
  // must be right for every other grammar that reaches the same rules.
  static const auto store = std::make_shared<tessera::grammar::TableStore>(256);
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\x01');
  if (newline == std::string::npos) return 0;
  try {
    tessera::grammar::CompiledGrammar g(tessera::grammar::parse_gbnf(input.substr(0, newline), {.max_elements = 4096, .max_rules = 512}),
                                        vocab, {.max_stack_nodes = 1u << 14, .cached_masks = 8}, store);
    tessera::grammar::StackSet state = g.initial();
    for (size_t i = newline + 1; i < size && !state.empty(); ++i) {
      const tessera::grammar::TokenMask& mask = g.allowed(state);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < int32_t(vocab->size()); ++id) {
        const bool alone = !vocab->text(id).empty() && g.accepts(state, id);
        if (mask.test(id) != alone) std::abort();
        if (alone) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      state = g.advance(state, allowed[data[i] % allowed.size()]);
      if (state.empty()) std::abort();
    }
  } catch (const tessera::grammar::GrammarError&) {
  }
  return 0;
}
