#pragma once
// Template pieces to a tree of statements and expressions.
#include <vector>

#include "server/chat/jinja_ast.h"
#include "server/chat/jinja_lexer.h"

namespace tessera::jinja {

// Throws TemplateError naming the line for syntax errors and for tags this
// subset does not support.
Body parse_pieces(const std::vector<Piece>& pieces, int max_depth);

}  // namespace tessera::jinja
