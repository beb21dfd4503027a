#pragma once
// JSON Schema to GBNF: the output is JSON text valid against the schema.
// Supported: type (and lists of types), properties / required /
// additionalProperties (absent means no other keys, as OpenAI's strict mode
// and xgrammar have it), items / prefixItems / minItems / maxItems, enum,
// const, anyOf / oneOf, allOf of one schema, $ref into $defs / definitions
// (recursion included), string minLength / maxLength / pattern / format
// (date, time, date-time, uuid, email, ipv4), integer minimum / maximum.
// Any other validation keyword is refused with a GrammarError naming it,
// since silently ignoring it would produce output the schema rejects.
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::grammar {

// Grammar text whose root matches the JSON texts the schema accepts.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// Rules defining `name` as the schema's documents, for grammars that
// combine several schemas; they need json_value_rules() once beside them.
std::string json_schema_rules(const nlohmann::ordered_json& schema, const std::string& name);

// Grammar text whose root matches any JSON object (response_format json_object).
std::string json_object_gbnf();

// The rules of free JSON (value, object, array, string, number, ws), for
// grammars that embed them.
std::string json_value_rules();

}  // namespace tessera::grammar
