// How numbers appear in the reports: fixed decimals per quantity, one table
// (docs/REPORTS.md, "Rounding"). Values are rounded to nearest from their exact
// binary value, as printf("%.Nf") does; "-0.0" is printed "0.0".
//
// Tables people read (Markdown, HTML, compare) use the suites' precision
// (FlagPerf's READMEs: `8103`, `76/80`, `39.3%`): FormatValue, FormatStat.
// CSV has plain numbers: no grouping, no unit, Decimals(q): FormatPlain.
// JSON keeps the raw values.
//
//   quantity                 unit shown     tables                 CSV
//   tokens per device per s  token/p/s      10,349 (grouped)       10348.9
//   MFU                      percent        47.9%                  47.9
//   memory                   GiB (2^30 B)   62 from 10 GiB, 0.4    61.8, 0.4
//   training / eval loss     -              3.312                  3.312
//   perplexity               -              27.45                  27.45
//   accuracy                 percent        61.3%                  61.3
//   step time                ms             812.4                  812.4
//   relative difference      percent        0.87%                  0.87
//   energy per token         mJ             175.84                 175.84
//   power per device         W              688.0                  688.0
//   time to train            minutes        13.31                  13.31
//   quality score            -              0.34123, 0.34, 90      0.34123
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "engine/report/stat.h"

namespace bm::report {

enum class Quantity {
  kTokensPerS,
  kMfu,  // a fraction (0.479), shown as a percent
  kGiB,  // bytes, shown in GiB
  kLoss,
  kPerplexity,
  kAccuracy,  // a fraction, shown as a percent
  kMs,
  kRelDiff,         // a fraction, shown as a percent with 2 decimals
  kJoulesPerToken,  // joules, shown in mJ with 2 decimals
  kWatts,
  kMinutes,  // seconds, shown in minutes with 2 decimals (MLPerf's time to train)
  kScore,    // a quality score as is, to 5 decimals, no trailing zeros (mAP 0.34123, target 0.34)
};

// The decimals of CSV's plain numbers.
int Decimals(Quantity q);

// The value in the unit shown (percent for fractions, GiB for bytes, mJ for joules per token).
double Scaled(Quantity q, double value);

// For tables: "3,564", "47.9%", "44", "0.4", "3.312", ... (no "%" when
// with_unit is false).
std::string FormatValue(Quantity q, double value, bool with_unit = true);

// For CSV: "3564.2", "47.9", "44.2", ...
std::string FormatPlain(Quantity q, double value);

// One round, or no spread at the shown precision: the median alone. Otherwise "median (min–max)",
// e.g. "3,564 (3,550–3,570)"; the dash is U+2013.
std::string FormatStat(Quantity q, const Stat& s, bool with_unit = true);

// Fixed decimals without a unit; never "-0".
std::string FormatFixed(double value, int decimals);

// "-1234567.5" → "-1,234,567.5": commas between groups of three integer digits.
std::string GroupThousands(std::string number);

}  // namespace bm::report
