#pragma once
// Pieces of GBNF text the lowerings share.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::grammar {

// A GBNF literal matching exactly `bytes`.
std::string gbnf_literal(std::string_view bytes);

// A GBNF class [...] matching the code points in the given inclusive ranges.
std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);

}  // namespace tessera::grammar
