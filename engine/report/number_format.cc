#include "engine/report/number_format.h"

#include <fmt/format.h>

namespace bm::report {

int Decimals(Quantity q) {
  switch (q) {
    case Quantity::kLoss:
      return 3;
    case Quantity::kPerplexity:
    case Quantity::kRelDiff:
      return 2;
    default:
      return 1;
  }
}

double Scaled(Quantity q, double value) {
  switch (q) {
    case Quantity::kMfu:
    case Quantity::kAccuracy:
    case Quantity::kRelDiff:
      return value * 100;
    case Quantity::kGiB:
      return value / (1024.0 * 1024.0 * 1024.0);
    default:
      return value;
  }
}

static bool IsPercent(Quantity q) {
  return q == Quantity::kMfu || q == Quantity::kAccuracy || q == Quantity::kRelDiff;
}

std::string FormatFixed(double value, int decimals) {
  std::string s = fmt::format("{:.{}f}", value, decimals);
  // "-0.0" after rounding a tiny negative: print "0.0".
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string FormatValue(Quantity q, double value, bool with_unit) {
  std::string s = FormatFixed(Scaled(q, value), Decimals(q));
  if (with_unit && IsPercent(q)) s += "%";
  return s;
}

std::string FormatStat(Quantity q, const Stat& s, bool with_unit) {
  std::string median = FormatValue(q, s.median, with_unit);
  if (!s.varies()) return median;
  std::string lo = FormatValue(q, s.min, false), hi = FormatValue(q, s.max, false);
  if (lo == hi) return median;  // a spread below the shown precision
  return fmt::format("{} ({}\u2013{})", median, lo, hi);
}

}  // namespace bm::report
