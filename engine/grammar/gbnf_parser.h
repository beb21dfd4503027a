#pragma once
// GBNF, the grammar text llama.cpp reads (and vLLM's guided_grammar takes):
//
//   root   ::= object
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   ws     ::= [ \t\n]*          # comments run to the end of the line
//
// Literals "..." with \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH escapes, classes
// [a-z] and [^...] over code points, '.' for any character, groups, '|',
// and the postfixes * + ? {m} {m,} {m,n}. A rule runs until the next
// "name ::=", so rules may span lines. The root rule is named "root".
#include <string_view>

#include "engine/grammar/grammar.h"

namespace tessera::grammar {

// Throws GrammarError naming the line and column of the problem.
Grammar parse_gbnf(std::string_view text, GrammarLimits limits = {});

}  // namespace tessera::grammar
