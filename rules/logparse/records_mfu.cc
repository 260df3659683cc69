#include "rules/logparse/records_mfu.h"

#include <fmt/format.h>

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

void DropRecordsFlops(ParsedLog& log, std::string_view name, std::string_view what,
                      std::string_view why) {
  int64_t dropped = 0, first = 0;
  for (Iteration& it : log.iterations) {
    if (!it.flops_per_device_per_s) continue;
    it.flops_per_device_per_s.reset();
    first = first ? first : it.line;
    ++dropped;
  }
  if (dropped == 0) return;
  log.notes.push_back(
      fmt::format("mfu.stated_flops_per_device: {}:{}: the {} of {} record(s) not read: {}", name,
                  first, what, dropped, why));
}

}  // namespace bm::logparse
