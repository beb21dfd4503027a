#pragma once
// JSON Schema to GBNF: the output is JSON text valid against the schema.
// Supported: type (and lists of types), properties / required /
// additionalProperties (absent means no other keys, as OpenAI's strict mode
// and xgrammar have it), items / prefixItems / minItems / maxItems, enum,
// const, anyOf / oneOf, allOf of one schema, $ref into $defs / definitions
// (recursion included), string minLength / maxLength / pattern / format
// (date, time, date-time, uuid, email, ipv4, hostname), integer and number
// minimum / maximum / exclusiveMinimum / exclusiveMaximum (whole-number
// bounds on numbers), multipleOf 1, 0.1, 0.01, ... on numbers, and
// minProperties up to the number of required properties.
// Any other validation keyword is refused with a GrammarError naming it,
// since silently ignoring it would produce output the schema rejects.
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::grammar {

// What JSON texts may hold between tokens unless told otherwise: up to 20
// spaces, tabs and newlines, so a model cannot loop on whitespace.
inline const std::string kJsonWhitespace = "[ \\t\\n]{0,20}";

// Grammar text whose root matches the JSON texts the schema accepts;
// `whitespace` is a GBNF expression for what may separate tokens.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const std::string& whitespace = kJsonWhitespace);

// Rules defining `name` as the schema's documents, for grammars that
// combine several schemas; they need json_value_rules() once beside them.
std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name);

// Grammar text whose root matches any JSON object (response_format json_object).
std::string json_object_gbnf(const std::string& whitespace = kJsonWhitespace);

// The rules of free JSON (value, object, array, string, number, ws), for
// grammars that embed them.
std::string json_value_rules(const std::string& whitespace = kJsonWhitespace);

}  // namespace tessera::grammar
