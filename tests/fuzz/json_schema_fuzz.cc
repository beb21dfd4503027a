// libFuzzer target: JSON schemas a client sends (response_format, guided
// JSON, tool parameters) lower to a grammar or fail with a GrammarError,
// however deep they nest or long their $ref chains run. The first two
// bytes give a chain of that many $defs (up to 4,096), each referring to
// the next, that ends in the input schema.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_to_gbnf.h"

namespace {

// How deeply the text's arrays and objects nest, strings aside. The server
// reads schemas with its body parser, which stops at 64 levels; deeper
// input is not what the converter is ever given.
int nesting(const std::string& text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  using Json = nlohmann::ordered_json;
  // At most the members the body parser lets one object hold
  // (JsonLimits::max_object_members): a client cannot send a longer one.
  const size_t chain = std::min<size_t>(size_t(data[0]) | (size_t(data[1]) << 8), 4096);
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (nesting(text) > 64) return 0;
  Json schema = Json::parse(text, nullptr, false);
  if (schema.is_discarded()) return 0;
  if (chain > 0 && schema.is_object()) {
    Json defs = schema.contains("$defs") && schema["$defs"].is_object() ? schema["$defs"] : Json::object();
    for (size_t i = 0; i < chain; ++i) {
      defs["c" + std::to_string(i)] = i + 1 < chain ? Json{{"$ref", "#/$defs/c" + std::to_string(i + 1)}} : Json{{"$ref", "#"}};
    }
    schema = Json{{"$defs", defs}, {"anyOf", Json::array({{{"$ref", "#/$defs/c0"}}, {{"type", "null"}}})}};
  }
  try {
    tessera::grammar::parse_gbnf(tessera::grammar::json_schema_to_gbnf(schema), {.max_elements = 1u << 16, .max_rules = 1u << 12});
  } catch (const tessera::grammar::GrammarError&) {
  }
  return 0;
}
