// How numbers appear in every report: fixed decimals per quantity, one table
// (docs/REPORTS.md, "Rounding"). Values are rounded to nearest from their exact
// binary value, as printf("%.Nf") does; "-0.0" is printed "0.0".
//
//   quantity                 unit shown     decimals   example
//   tokens per device per s  token/p/s      1          3564.2
//   MFU                      percent        1          47.9%
//   memory                   GiB (2^30 B)   1          44.2/80.0
//   training / eval loss     -              3          3.312
//   perplexity               -              2          27.45
//   accuracy                 percent        1          61.3%
//   step time                ms             1          812.4
//   relative difference      percent        2          0.87%
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
  kRelDiff,  // a fraction, shown as a percent with 2 decimals
};

int Decimals(Quantity q);

// The value in the unit shown (percent for fractions, GiB for bytes).
double Scaled(Quantity q, double value);

// "3564.2", "47.9%", "44.2", "3.312", ... (no "%" when with_unit is false).
std::string FormatValue(Quantity q, double value, bool with_unit = true);

// One round, or no spread at the shown precision: the median alone. Otherwise "median (min–max)",
// e.g. "3564.2 (3550.1–3570.3)"; the dash is U+2013.
std::string FormatStat(Quantity q, const Stat& s, bool with_unit = true);

// Fixed decimals without a unit; never "-0".
std::string FormatFixed(double value, int decimals);

}  // namespace bm::report
