// Summary of a metric over repeated measurements (rounds): the median with
// the minimum, maximum and count. Reports show "median (min–max)" and the count,
// as DESIGN.md asks; a single round is just its value.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <optional>
#include <vector>

namespace bm::report {

struct Stat {
  double median = 0;
  double min = 0;
  double max = 0;
  int n = 0;

  bool varies() const { return n > 1 && min != max; }
};

// nullopt when `values` is empty. The median of an even count is the mean of
// the two middle values. Precondition: every value is finite.
std::optional<Stat> Summarize(std::vector<double> values);

}  // namespace bm::report
