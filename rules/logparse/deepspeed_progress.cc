#include "rules/logparse/deepspeed_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// The whole number that starts `s`, or nullopt.
std::optional<int64_t> WholeAt(std::string_view s) {
  size_t end = 0;
  std::optional<int64_t> n = WholeCount(LeadingNumber(s, &end));
  if (!n || end == 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<DeepSpeedProgress> ReadDeepSpeedProgress(std::string_view line) {
  constexpr std::string_view kSkipped = ", skipped=";
  const size_t comma = line.find(kSkipped);
  if (comma == std::string_view::npos) return std::nullopt;
  const size_t at = line.rfind("step=", comma);
  if (at == std::string_view::npos ||
      (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_')))
    return std::nullopt;
  const std::string_view step_text = line.substr(at + 5, comma - at - 5);
  std::optional<int64_t> step = WholeAt(step_text);
  std::optional<int64_t> skipped = WholeAt(line.substr(comma + kSkipped.size()));
  if (!step || !skipped || std::to_string(*step) != step_text) return std::nullopt;
  return DeepSpeedProgress{*step, *skipped};
}

bool DeepSpeedSkipCounts::Read(std::string_view line, int64_t no) {
  std::optional<DeepSpeedProgress> p = ReadDeepSpeedProgress(line);
  if (!p) return false;
  by_step_.emplace(p->step, Count{p->skipped, no});
  return true;
}

void DeepSpeedSkipCounts::Apply(std::string_view name, ParsedLog& log) const {
  int64_t first_line = 0, first_step = 0, raised = 0;
  for (Iteration& it : log.iterations) {
    auto end = by_step_.find(it.step);
    if (end == by_step_.end()) continue;
    const int64_t before_step = it.step - it.span;
    auto begin = by_step_.find(before_step);
    if (before_step > 0 && begin == by_step_.end()) continue;  // an excerpt: not bracketed
    const int64_t before = before_step > 0 ? begin->second.skipped : 0;
    const int64_t engine = end->second.skipped - before;
    if (engine <= it.skipped) continue;
    it.skipped = std::min(engine, it.span);
    if (raised++ == 0) {
      first_line = end->second.line;
      first_step = it.step;
    }
  }
  if (raised > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: DeepSpeed's `step=N, skipped=K` lines count skipped steps that the iteration "
        "lines do not ({} record(s), the first at step {}): Megatron-DeepSpeed reports none for "
        "its pipeline engine's steps (train_step's skipped_iter = 0); the records take the "
        "engine's count",
        name, first_line, raised, first_step));
  }
}

}  // namespace bm::logparse
