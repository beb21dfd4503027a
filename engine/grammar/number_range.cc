#include "engine/grammar/number_range.h"

#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/integer_range.h"

namespace tessera::grammar {
namespace {

constexpr int64_t kLargest = 999999999999999;  // 15 digits, as integer schemas allow

class MagnitudeGrammar {
 public:
  explicit MagnitudeGrammar(int fraction_digits) : digits_(fraction_digits) {}

  // Decimal magnitudes m >= 0 with a <(=) m <(=) b; b absent: unbounded.
  std::vector<std::string> between(NumberBound a, std::optional<NumberBound> b) const {
    std::vector<std::string> alts;
    const int64_t last_whole = b ? b->value - 1 : kLargest;  // integer parts whose every fraction is below b
    const bool above_a = !b || a.value < b->value;
    if (a.exclusive && above_a && digits_ > 0) alts.push_back(literal(a.value) + " " + nonzero_fraction());
    const int64_t first_whole = a.exclusive ? a.value + 1 : a.value;
    if (first_whole <= last_whole) alts.push_back("( " + integer_range_gbnf(first_whole, last_whole) + " ) " + any_fraction());
    if (b && !b->exclusive && (above_a || !a.exclusive)) alts.push_back(literal(b->value) + " " + zero_fraction());
    return alts;
  }

 private:
  static std::string literal(int64_t v) { return "\"" + std::to_string(v) + "\""; }
  std::string upto(const std::string& unit, int n) const {
    return n <= 0 ? "" : n == 1 ? unit + "?" : unit + "{0," + std::to_string(n) + "}";
  }
  std::string any_fraction() const { return digits_ == 0 ? "" : "( \".\" [0-9]" + upto(" [0-9]", digits_ - 1) + " )?"; }
  std::string zero_fraction() const { return digits_ == 0 ? "" : "( \".\" \"0\"" + upto(" \"0\"", digits_ - 1) + " )?"; }
  // A fraction that is not zero: alternatives by the place of its first non-zero digit.
  std::string nonzero_fraction() const {
    std::string alts;
    for (int zeros = 0; zeros < digits_; ++zeros) {
      std::string alt;
      for (int i = 0; i < zeros; ++i) alt += "\"0\" ";
      alt += "[1-9]" + upto(" [0-9]", digits_ - zeros - 1);
      alts += (zeros ? " | " : "") + alt;
    }
    return "\".\" ( " + alts + " )";
  }

  int digits_;
};

void check_bound(const std::optional<NumberBound>& b) {
  if (b && (b->value < -kLargest || b->value > kLargest)) throw GrammarError("a number bound beyond 15 digits is not supported");
}

}  // namespace

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi, int max_fraction_digits) {
  check_bound(lo);
  check_bound(hi);
  const MagnitudeGrammar magnitudes(max_fraction_digits);
  std::vector<std::string> alts;
  // Values >= 0 in the range.
  const bool nonnegative = !hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive);
  if (nonnegative) {
    const NumberBound from = lo && lo->value >= 0 ? *lo : NumberBound{0, false};
    for (std::string& a : magnitudes.between(from, hi)) alts.push_back(std::move(a));
  }
  // Values < 0, written as "-" and a magnitude; "-0" too where 0 is inside.
  const bool zero_inside = (!lo || lo->value < 0 || (lo->value == 0 && !lo->exclusive)) && nonnegative &&
                           (!hi || hi->value > 0 || !hi->exclusive);
  if (!lo || lo->value < 0 || zero_inside) {
    const NumberBound from = hi && hi->value < 0 ? NumberBound{-hi->value, hi->exclusive} : NumberBound{0, !zero_inside};
    std::optional<NumberBound> to;
    if (lo) to = NumberBound{-lo->value, lo->exclusive};
    for (const std::string& a : magnitudes.between(from, to)) alts.push_back("\"-\" ( " + a + " )");
  }
  if (alts.empty()) throw GrammarError("the range holds no number");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

}  // namespace tessera::grammar
