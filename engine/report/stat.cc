#include "engine/report/stat.h"

#include <algorithm>

namespace bm::report {

std::optional<Stat> Summarize(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  Stat s;
  s.n = static_cast<int>(values.size());
  s.min = values.front();
  s.max = values.back();
  size_t mid = values.size() / 2;
  s.median = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  return s;
}

}  // namespace bm::report
