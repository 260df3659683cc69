#include "engine/report/number_format.h"

#include <fmt/format.h>

#include <cmath>

namespace bm::report {

int Decimals(Quantity q) {
  switch (q) {
    case Quantity::kScore:
      return 5;
    case Quantity::kLoss:
      return 3;
    case Quantity::kPerplexity:
    case Quantity::kRelDiff:
    case Quantity::kJoulesPerToken:
    case Quantity::kMinutes:
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
    case Quantity::kJoulesPerToken:
      return value * 1000;
    case Quantity::kMinutes:
      return value / 60;
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

std::string GroupThousands(std::string number) {
  size_t begin = number.find_first_of("0123456789");
  if (begin == std::string::npos) return number;
  size_t end = number.find_first_not_of("0123456789", begin);
  if (end == std::string::npos) end = number.size();
  std::string out = number.substr(0, begin);
  for (size_t i = begin; i < end; ++i) {
    if (i > begin && (end - i) % 3 == 0) out += ',';
    out += number[i];
  }
  return out + number.substr(end);
}

// A score as is, to 5 decimals without trailing zeros: 0.34123, 0.34, 90.
std::string ScoreText(double value) {
  std::string s = FormatFixed(value, Decimals(Quantity::kScore));
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string FormatValue(Quantity q, double value, bool with_unit) {
  double shown = Scaled(q, value);
  std::string s;
  switch (q) {
    case Quantity::kTokensPerS:
      s = GroupThousands(FormatFixed(shown, 0));
      break;
    case Quantity::kGiB:  // whole GiB as the suites print them; small (CPU) sizes keep a decimal
      s = FormatFixed(shown, std::abs(shown) >= 9.95 ? 0 : 1);
      break;
    case Quantity::kScore:
      s = ScoreText(shown);
      break;
    default:
      s = FormatFixed(shown, Decimals(q));
  }
  if (with_unit && IsPercent(q)) s += "%";
  return s;
}

std::string FormatPlain(Quantity q, double value) {
  if (q == Quantity::kScore) return ScoreText(value);
  return FormatFixed(Scaled(q, value), Decimals(q));
}

std::string FormatStat(Quantity q, const Stat& s, bool with_unit) {
  std::string median = FormatValue(q, s.median, with_unit);
  if (!s.varies()) return median;
  std::string lo = FormatValue(q, s.min, false), hi = FormatValue(q, s.max, false);
  if (lo == hi) return median;  // a spread below the shown precision
  return fmt::format("{} ({}\u2013{})", median, lo, hi);
}

}  // namespace bm::report
