// libFuzzer target: grammar text, JSON schemas and regexes from a client
// must compile or fail with a GrammarError, within bounded time and memory.
// The first byte picks the input kind.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/regex_to_gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    std::string gbnf;
    switch (data[0] % 3) {
      case 0: gbnf = text; break;
      case 1: {
        const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
        if (schema.is_discarded()) return 0;
        gbnf = tessera::grammar::json_schema_to_gbnf(schema);
        break;
      }
      default: gbnf = tessera::grammar::regex_to_gbnf(text); break;
    }
    tessera::grammar::parse_gbnf(gbnf, {.max_elements = 1u << 16, .max_rules = 1u << 12});
  } catch (const tessera::grammar::GrammarError&) {
  }
  return 0;
}
