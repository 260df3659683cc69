#include "rules/logparse/nan_steps.h"

#include <fmt/format.h>

#include <cmath>

namespace bm::logparse {

void CountNonFiniteLosses(ParsedLog& log, std::string_view name) {
  const Iteration* first = nullptr;
  int64_t records = 0, spans = 0;
  for (Iteration& it : log.iterations) {
    if (!it.loss || std::isfinite(*it.loss) || it.nan > 0) continue;
    it.nan = 1;
    first = first ? first : &it;
    ++records;
    spans += it.span > 1 ? 1 : 0;
  }
  if (!first) return;
  log.notes.push_back(fmt::format(
      "loss: {} record(s) from {}:{} (step {}) have a NaN or Inf loss: counted as NaN "
      "iterations{}",
      records, name, first->line, first->step,
      spans > 0 ? fmt::format(", one each ({} of them span several steps whose losses the log "
                              "does not show one by one: a lower bound)",
                              spans)
                : ""));
}

}  // namespace bm::logparse
