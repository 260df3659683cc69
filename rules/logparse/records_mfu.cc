#include "rules/logparse/records_mfu.h"

namespace bm::logparse {

std::optional<RecordsMfu> MfuOverRecords(const std::vector<Iteration>& its, int64_t warmup,
                                         std::optional<double> Iteration::*figure) {
  RecordsMfu r;
  double steps = 0, time = 0;  // time in units of "steps at MFU 1"
  for (const Iteration& it : its) {
    if (it.step - it.span + 1 <= warmup) continue;
    const std::optional<double>& x = it.*figure;
    if (!x || !(*x > 0)) {
      ++r.left_out;
      continue;
    }
    if (r.records == 0) r.first_step = it.step - it.span + 1;
    r.last_step = it.step;
    r.line = it.line;
    ++r.records;
    steps += static_cast<double>(it.span);
    time += static_cast<double>(it.span) / *x;
  }
  if (r.records == 0) return std::nullopt;
  r.value = steps / time;
  return r;
}

}  // namespace bm::logparse
