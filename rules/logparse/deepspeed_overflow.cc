#include "rules/logparse/deepspeed_overflow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kRankZeroTags[] = {"[deepspeed] OVERFLOW! Rank 0 Skipping step",
                                              "[deepscale] OVERFLOW! Rank 0 Skipping step",
                                              "Overflow detected. Skipping step."};
constexpr std::string_view kEveryRankTag =
    "[deepspeed] fp16 dynamic loss scale overflow! Skipping step.";

}  // namespace

bool IsDeepSpeedOverflowLine(std::string_view line) {
  for (std::string_view tag : kRankZeroTags) {
    if (line.find(tag) != std::string_view::npos) return true;
  }
  return line.find(kEveryRankTag) != std::string_view::npos;
}

std::optional<int64_t> OverflowOptimizerStep(std::string_view line) {
  constexpr std::string_view kWords = "Grad overflow on iteration";
  const size_t at = line.find(kWords);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kWords.size());
  if (!rest.empty() && rest[0] == ':') rest.remove_prefix(1);
  rest = Trim(rest);
  size_t end = 0;
  std::optional<int64_t> iter = WholeCount(LeadingNumber(rest, &end));
  if (!iter || end != rest.size()) return std::nullopt;
  return *iter + 1;
}

bool DeepSpeedOverflows::Read(std::string_view line, int64_t no) {
  if (!IsDeepSpeedOverflowLine(line)) return false;
  Line l;
  l.no = no;
  if (size_t at = line.find(kEveryRankTag); at != std::string_view::npos)
    l.every_rank_message = std::string(Trim(line.substr(at + kEveryRankTag.size())));
  lines_.push_back(std::move(l));
  return true;
}

void DeepSpeedOverflows::Count(std::string_view name, ParsedLog& log) const {
  int64_t after_last = 0, first_after_last = 0, copies = 0, first_copy = 0;
  std::set<std::pair<int64_t, std::string>> seen;  // (record line, every-rank message)
  for (const Line& l : lines_) {
    // The record of the step the overflow happened in is the first one printed after it (records
    // are in step order; a resumed run's come after the lines of the run it replaced).
    Iteration* next = nullptr;
    for (Iteration& it : log.iterations) {
      if (it.line > l.no && (!next || it.line < next->line)) next = &it;
    }
    if (!next) {
      if (after_last++ == 0) first_after_last = l.no;
      continue;
    }
    if (!l.every_rank_message.empty() && !seen.emplace(next->line, l.every_rank_message).second) {
      if (copies++ == 0) first_copy = l.no;  // another rank's copy of a step already counted
      continue;
    }
    next->skipped = std::min(next->skipped + 1, next->span);
  }
  if (copies > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} more copies of 'fp16 dynamic loss scale overflow! Skipping step.' with the same "
        "loss scales before the same record: other ranks' (FP16_UnfusedOptimizer logs it on every "
        "rank), counted once",
        name, first_copy, copies));
  }
  if (after_last > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} fp16 overflow line(s) ('Skipping step.') after the last record: their skipped "
        "steps are past it, not counted",
        name, first_after_last, after_last));
  }
}

}  // namespace bm::logparse
