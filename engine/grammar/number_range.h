#pragma once
// A GBNF expression for the JSON numbers in a range whose bounds are
// integers (each absent, inclusive or exclusive), with at most
// `max_fraction_digits` digits after the point and no exponent: the
// integer part by integer_range_gbnf, the fraction by whether the bound
// it sits on lets it be non-zero.
#include <cstdint>
#include <optional>
#include <string>

namespace tessera::grammar {

struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// Bounds within 15 digits; an empty range throws GrammarError.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi, int max_fraction_digits);

}  // namespace tessera::grammar
