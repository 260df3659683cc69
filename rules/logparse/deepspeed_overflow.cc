#include "rules/logparse/deepspeed_overflow.h"

#include <fmt/format.h>

namespace bm::logparse {

bool IsDeepSpeedOverflowLine(std::string_view line) {
  for (std::string_view tag : {"[deepspeed] OVERFLOW! Rank 0 Skipping step",
                               "[deepscale] OVERFLOW! Rank 0 Skipping step"}) {
    if (line.find(tag) != std::string_view::npos) return true;
  }
  return false;
}

void CountOverflowSkips(const std::vector<int64_t>& overflow_lines, std::string_view name,
                        ParsedLog& log) {
  int64_t after_last = 0, first_after_last = 0;
  for (int64_t at : overflow_lines) {
    // The record of the step the overflow happened in is the first one printed after it (records
    // are in step order; a resumed run's come after the lines of the run it replaced).
    Iteration* next = nullptr;
    for (Iteration& it : log.iterations) {
      if (it.line > at && (!next || it.line < next->line)) next = &it;
    }
    if (next) {
      ++next->skipped;
    } else if (after_last++ == 0) {
      first_after_last = at;
    }
  }
  if (after_last > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} fp16 overflow line(s) ('OVERFLOW! Rank 0 Skipping step.') after the last "
        "record: their skipped steps are past it, not counted",
        name, first_after_last, after_last));
  }
}

}  // namespace bm::logparse
