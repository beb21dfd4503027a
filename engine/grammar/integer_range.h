#pragma once
// A GBNF expression for the decimal integers in [lo, hi] as JSON writes
// them (no leading zeros, '-' for negatives): alternatives over digit
// prefixes, as a regex for a numeric range is built.
#include <cstdint>
#include <string>

namespace tessera::grammar {

std::string integer_range_gbnf(int64_t lo, int64_t hi);

}  // namespace tessera::grammar
