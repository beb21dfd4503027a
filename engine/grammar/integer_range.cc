#include "engine/grammar/integer_range.h"

#include <algorithm>
#include <vector>

namespace tessera::grammar {
namespace {

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) { return n == 0 ? "" : n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}"; }

// Numbers from x to y, both with the same number of digits.
std::string same_length(const std::string& x, const std::string& y) {
  if (x.empty()) return "\"\"";
  if (x == y) return "\"" + x + "\"";
  const size_t n = x.size();
  if (x[0] == y[0]) return "\"" + std::string(1, x[0]) + "\" ( " + same_length(x.substr(1), y.substr(1)) + " )";
  std::vector<std::string> alts;
  char low = x[0], high = y[0];
  const std::string x_rest = x.substr(1), y_rest = y.substr(1);
  if (x_rest.find_first_not_of('0') != std::string::npos) {
    alts.push_back("\"" + std::string(1, x[0]) + "\" ( " + same_length(x_rest, std::string(n - 1, '9')) + " )");
    ++low;
  }
  if (y_rest.find_first_not_of('9') != std::string::npos) {
    alts.push_back("\"" + std::string(1, y[0]) + "\" ( " + same_length(std::string(n - 1, '0'), y_rest) + " )");
    --high;
  }
  if (low <= high) alts.push_back(digit_class(low, high) + any_digits(n - 1));
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

// Positive numbers in [a, b], 1 <= a <= b.
std::string positive(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  int64_t low_of_length = 1;
  for (size_t digits = 1; digits <= 18 && low_of_length <= b; ++digits, low_of_length *= 10) {
    const int64_t high_of_length = low_of_length * 10 - 1;
    const int64_t x = std::max(a, low_of_length), y = std::min(b, high_of_length);
    if (x <= y) alts.push_back("( " + same_length(std::to_string(x), std::to_string(y)) + " )");
  }
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

}  // namespace

std::string integer_range_gbnf(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back("\"-\" ( " + positive(std::max<int64_t>(1, -hi), -lo) + " )");
  if (lo <= 0 && hi >= 0) alts.push_back("\"0\"");
  if (hi > 0) alts.push_back("( " + positive(std::max<int64_t>(1, lo), hi) + " )");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

}  // namespace tessera::grammar
