#pragma once
// Structured-output requests (response_format, vLLM's guided_* and
// structured_outputs fields, their gRPC equivalents, required tool calls)
// lowered to the one grammar form the engine runs.
#include <optional>
#include <string>
#include <vector>

#include "server/serving/bounded_json.h"

namespace tessera {

struct StructuredOutput {
  enum class Kind : uint8_t { kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };
  Kind kind = Kind::kJsonObject;
  Json schema;                       // kJsonSchema
  std::string text;                  // kRegex, kGrammar
  std::vector<std::string> choices;  // kChoice
  std::string param;                 // the request field it came from, named in errors
  // JSON kinds: a regex for the whitespace between tokens (vLLM's
  // guided_whitespace_pattern; empty: none), instead of the default.
  std::optional<std::string> whitespace_pattern;
};

// GBNF text for the constraint, within the size limit; a 400 naming the
// request field (and the schema keyword) otherwise. Compiling it is the
// model's GrammarCompiler's work.
std::string structured_output_gbnf(const StructuredOutput& s);

// Text equal for equal constraints (kind, content, whitespace), for caching
// what they lower and compile to.
std::string structured_output_identity(const StructuredOutput& s);

}  // namespace tessera
