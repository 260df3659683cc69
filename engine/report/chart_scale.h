// Axis scales for the SVG charts: map data to pixels and choose tick values
// people can read (1, 2, 5 × 10^k on linear axes; 1, 2, 3, 5 × 10^k on log
// axes, falling back to decades when there are too many).
//
// Thread safety: values and pure functions.
#pragma once

#include <string>
#include <vector>

namespace bm::report {

struct Scale {
  double lo = 0;  // data range shown (log: the data values, not their logs)
  double hi = 1;
  double px_lo = 0;  // pixel of lo and of hi (y axes: px_lo > px_hi)
  double px_hi = 1;
  bool log = false;  // precondition for log: 0 < lo < hi

  double operator()(double v) const;
};

// Round numbers covering [lo, hi] with about `target` intervals; the returned
// ticks lie in [lo, hi] after `lo`/`hi` are widened to tick multiples by
// NiceRange.
std::vector<double> LinearTicks(double lo, double hi, int target = 5);

// [lo, hi] widened outward to multiples of the linear tick step; a flat range
// (lo == hi) becomes lo ± 1 (or ± 10%).
void NiceRange(double& lo, double& hi, int target = 5);

// Log-axis ticks inside [lo, hi] (0 < lo < hi): at most about 8.
std::vector<double> LogTicks(double lo, double hi);

// A tick label: the shortest of "%.Ng" that shows the value exactly enough
// ("0.5", "2", "1e+04" -> "10000").
std::string TickLabel(double v);

// Text for XML/HTML: & < > " ' escaped.
std::string XmlEscape(const std::string& s);

}  // namespace bm::report
