#pragma once
// Regular expressions (the Python / JavaScript syntax vLLM's guided_regex
// and JSON Schema's "pattern" take) as GBNF. The whole output must match:
// a leading '^' and trailing '$' are accepted and add nothing. Supported:
// literals and escapes, classes with ranges and negation, \d \w \s and
// their negations, '.', groups (capturing, non-capturing, named),
// alternation, * + ? {m} {m,} {m,n} (lazy forms match the same strings).
// Look-around, back-references and word boundaries are refused with a
// GrammarError, since a context-free grammar cannot express them.
#include <string>
#include <string_view>

namespace tessera::grammar {

// A GBNF expression for the pattern. With `json_string` the matched text
// is written as the inside of a JSON string: quotes, backslashes and
// control characters escaped, and classes never produce them raw.
std::string regex_to_gbnf_expression(std::string_view pattern, bool json_string);

// A grammar whose root is the pattern.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace tessera::grammar
